"""Headless Chromium for the report's browser tests (Debian's `chromium` package).

Without a browser the tests skip, except where CATTY_CTX_REQUIRE_BROWSER=1 (CI sets it):
there a missing browser is a failure, so the browser tests can never silently not run.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]


def find() -> str:
    """The browser's path; skips (or, where it is required, fails) when there is none."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CATTY_CTX_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is required here (CATTY_CTX_REQUIRE_BROWSER=1) but is not installed")
        pytest.skip("chromium is not installed")
    return path


def run(browser: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, timeout=timeout, check=False)


def dump_dom(browser: str, page: Path, *, budget_ms: int = 3000, fragment: str = "") -> str:
    """The DOM after the page loaded and its scripts ran (virtual time lets async work finish)."""
    proc = run(browser, f"--virtual-time-budget={budget_ms}", "--dump-dom", page.resolve().as_uri() + fragment)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc.stdout.decode()


def screenshot(browser: str, page: Path, png: Path, *, width: int, height: int) -> Path:
    proc = run(browser, f"--window-size={width},{height}", f"--screenshot={png}", page.resolve().as_uri())
    assert proc.returncode == 0 and png.is_file(), proc.stderr.decode(errors="replace")[-2000:]
    return png
