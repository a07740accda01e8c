"""Hostile files around a session: a log, summary, segment or blob that cannot be read, a folder
that cannot be written, a log whose last line is not an event. Each gets one stderr line naming
the file and its documented exit code, never an internal error, and nothing is written.

The real program runs in a subprocess. A file's mode only bites a process without the
root's override, so as root the program runs with that capability dropped (setpriv).
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

ERROR = "catty-ctx: error: "


@functools.cache
def _unprivileged() -> list[str]:
    """The prefix that runs a command which cannot read or write past a file's mode."""
    if os.geteuid() != 0:
        return []
    prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    if shutil.which("setpriv") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root, and setpriv cannot drop the override of file modes here")
    return prefix


def run(*args: str, cwd: Path, input: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*_unprivileged(), sys.executable, "-m", "catty_ctx", *args], input=input, capture_output=True,
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)


def tree(path: Path) -> dict[str, str]:
    """Every entry under PATH with its content's digest: any write, new file or removal shows
    (the lock file aside: a writer leaves it, empty, as every writer does)."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.name.endswith(".lock"):
            continue
        key = str(p.relative_to(path))
        out[key] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "other"
    return out


def one_error(proc: subprocess.CompletedProcess[bytes], code: int) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), err
    return lines[0][len(ERROR):]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder holding a copy of the demo session as `sess`, and an empty `out`."""
    shutil.copytree(FIXTURES / "sessions" / "demo", tmp_path / "sess")
    (tmp_path / "out").mkdir()
    return tmp_path


EVENT = b'{"kind":"message","id":"n1","role":"user","text":"more"}\n'

# -- a log that cannot be read ----------------------------------------------------------------

LOG_READERS = [
    ["inspect", "sess"],
    ["inspect", "sess/updates.jsonl", "--json"],
    ["prune", "sess"],
    ["resume", "sess", "--format", "openai"],
    ["repair", "sess", "--check"],
    ["repair", "sess"],
    ["compact", "sess", "--force"],
    ["fork", "sess", "out/child"],
    ["report", "sess"],
]


@pytest.mark.parametrize("args", LOG_READERS, ids=" ".join)
def test_an_unreadable_log_is_a_data_error_naming_it(work: Path, args: list[str]) -> None:
    log = work / "sess" / "updates.jsonl"
    log.chmod(0)
    before = tree(work)
    proc = run(*args, cwd=work, input=EVENT)
    assert one_error(proc, 65) == "sess/updates.jsonl: cannot read (Permission denied)"
    assert tree(work) == before


# -- a summary.json that cannot be read ---------------------------------------------------------

SUMMARY_READERS = [
    ["inspect", "sess", "--json"],
    ["inspect", "sess/updates.jsonl"],
    ["prune", "sess"],
    ["resume", "sess", "--format", "anthropic"],
    ["repair", "sess", "--check"],
    ["repair", "sess"],
    ["compact", "sess", "--force"],
    ["report", "sess"],
]


@pytest.mark.parametrize("args", SUMMARY_READERS, ids=" ".join)
def test_an_unreadable_summary_is_a_data_error_naming_it(work: Path, args: list[str]) -> None:
    (work / "sess" / "summary.json").chmod(0)
    before = tree(work)
    proc = run(*args, cwd=work, input=EVENT)
    assert one_error(proc, 65) == "sess/summary.json: cannot read (Permission denied)"
    assert tree(work) == before
