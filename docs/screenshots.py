"""Regenerate the screenshots in docs/ from the demo session's report (needs chromium).

    python docs/screenshots.py

Writes docs/report-demo.png (1280 px wide) and docs/report-demo-narrow.png (390 px, a
phone's width) from `catty-ctx report fixtures/sessions/demo`, drawn by headless Chromium.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOTS = [("report-demo.png", 1280, 1400), ("report-demo-narrow.png", 390, 1400)]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def main() -> int:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "demo.html"
        # Run from the source folder so the page names the session as the README does.
        subprocess.run([sys.executable, "-m", "catty_ctx", "report", "fixtures/sessions/demo", "-o", str(page)], cwd=ROOT, check=True)
        for name, width, height in SHOTS:
            with tempfile.TemporaryDirectory() as profile:
                subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                                f"--screenshot={ROOT / 'docs' / name}", page.as_uri()], check=True, capture_output=True)
            print(f"wrote docs/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
