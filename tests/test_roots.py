"""The ROOT runner (catty_ctx/roots.py): each session's work, the failures reported and skipped,
one exit rule for every command: the most severe code, by the order docs/spec.md gives."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from catty_ctx.errors import CattyError, DataError, ExitCode, LockBusy, UsageError
from catty_ctx.roots import SEVERITY, RootRun, most_severe
from conftest import FIXTURES, ROOT, cli


def _work(item: str) -> str:
    if item.startswith("data"):
        raise DataError("bad line", path=item, line=3)
    if item.startswith("busy"):
        raise LockBusy(f"{item}: the session lock is busy")
    if item.startswith("usage"):
        raise UsageError(f"{item}: no such session")
    return item.upper()


def test_the_run_yields_the_sessions_that_worked_and_reports_the_others_in_order() -> None:
    seen: list[tuple[str, str]] = []
    run = RootRun(_work, ["a", "busy1", "b", "data1", "c"], on_error=lambda path, exc: seen.append((path, str(exc))))
    assert list(run) == ["A", "B", "C"]
    assert [path for path, _ in seen] == ["busy1", "data1"]
    assert run.exit_code() == ExitCode.DATA  # 65 outranks 75 whichever came first
    assert RootRun(_work, ["a"]).exit_code() == 0


def test_the_exit_is_the_most_severe_whatever_the_order() -> None:
    for items in (["busy", "usage", "data"], ["data", "usage", "busy"], ["usage", "data"]):
        run = RootRun(_work, items, on_error=lambda *_: None)
        list(run)
        assert run.exit_code() == ExitCode.DATA, items
    run = RootRun(_work, ["usage", "a"], on_error=lambda *_: None)
    list(run)
    assert run.exit_code() == ExitCode.USAGE and run.exit_code(check_failed=True) == ExitCode.USAGE
    assert most_severe([ExitCode.CHECK_FAILED]) == 1 and most_severe([]) == 0
    assert most_severe([ExitCode.TEMP_FAIL, ExitCode.INTERNAL, ExitCode.UNAVAILABLE]) == ExitCode.INTERNAL


def test_without_a_reporter_the_first_failure_is_raised() -> None:
    try:
        list(RootRun(_work, ["a", "data", "b"]))
    except CattyError as exc:
        assert exc.exit_code == ExitCode.DATA
    else:
        raise AssertionError("no error raised")


def test_the_spec_states_the_order_of_severity() -> None:
    spec = (ROOT / "docs" / "spec.md").read_text()
    said = re.search(r"most severe first: ([\d, ]+), then 1", spec)
    assert said is not None and [int(c) for c in said.group(1).split(", ")] == [int(c) for c in SEVERITY[:-1]]


def test_inspect_repair_and_compact_of_a_root_exit_by_the_rule(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "sessions" / "demo", root / "good")
    shutil.copytree(FIXTURES / "sessions" / "demo", root / "bad")
    (root / "bad" / "updates.jsonl").write_bytes(b'{"v":1,"seq":0,"kind":"session"}\nnot json\n' * 3)
    for args in (["inspect", str(root)], ["repair", str(root), "--check"], ["compact", str(root), "--check"]):
        proc = cli(*args)
        assert proc.returncode == ExitCode.DATA, (args, proc.stderr)
        assert proc.stderr.decode().count("bad") >= 1, (args, proc.stderr)
