"""The ROOT runner (catty_ctx/roots.py): each session's work, the failures reported and skipped,
one exit rule for every command: the most severe code, by the order docs/spec.md gives."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from catty_ctx.errors import CattyError, DataError, ExitCode, LockBusy, UsageError
from catty_ctx.fleet.runner import SEVERITY, RootRun, most_severe
import pytest
from support import FIXTURES, ROOT, cli, msg, session_event, write_log


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


def test_a_result_can_carry_its_failure_or_a_finding() -> None:
    seen: list[str] = []
    run = RootRun(_work, ["a", "b", "busy"], on_error=lambda path, exc: seen.append(path),
                  failure=lambda r: DataError(f"{r}: unreadable") if r == "B" else None, finding=lambda r: r == "A")
    assert list(run) == ["A", "B"] and seen == ["b", "busy"]  # B counts as a failure and is still yielded
    assert run.exit_code() == ExitCode.DATA
    found = RootRun(_work, ["a", "c"], finding=lambda r: r == "A")
    assert list(found) == ["A", "C"] and found.exit_code() == ExitCode.CHECK_FAILED


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


def _report_root(tmp_path: Path, names: tuple[str, str, str]) -> tuple[Path, Path, Path]:
    """A ROOT of three sessions named NAMES: good, unreadable (65), and one whose page cannot be
    written (73: a folder stands where its page goes), and the site folder."""
    from catty_ctx.html.index import page_name

    good, unreadable, unwritable = (tmp_path / "root" / n for n in names)
    shutil.copytree(FIXTURES / "sessions" / "demo", good)
    shutil.copytree(FIXTURES / "sessions" / "demo", unwritable)
    write_log(unreadable, [session_event("broken-1"), msg("user", "hi")], raw_tail=b"[1, 2]\n")
    site = tmp_path / "site"
    (site / page_name(tmp_path / "root", unwritable)).mkdir(parents=True)
    return tmp_path / "root", site, good


@pytest.mark.parametrize("names", [("a", "b", "c"), ("c", "a", "b"), ("b", "c", "a")])
def test_report_of_a_root_exits_by_the_rule_and_writes_the_good_pages(tmp_path: Path, names: tuple[str, str, str]) -> None:
    root, site, good = _report_root(tmp_path, names)
    proc = cli("report", str(root), "-o", str(site))
    assert proc.returncode == ExitCode.CANT_CREATE, proc.stderr  # 73 outranks 65 whichever session came first
    lines = proc.stderr.decode().splitlines()
    assert len([ln for ln in lines if "updates.jsonl:3" in ln]) == 1 and len([ln for ln in lines if "cannot write" in ln]) == 1, lines
    assert "Traceback" not in proc.stderr.decode()
    from catty_ctx.html.index import page_name

    assert "demo-0001" in (site / page_name(root, good)).read_text()
    assert (site / "index.html").is_file() and "cannot read" in (site / "index.html").read_text()


def test_report_of_a_root_in_forked_workers_answers_the_same(tmp_path: Path) -> None:
    from catty_ctx.html import write_root

    root, site, good = _report_root(tmp_path, ("a", "b", "c"))
    seen: list[str] = []
    done = write_root(root, site, jobs=2, on_error=lambda path, exc: seen.append(str(path)))
    assert done.exit_code == ExitCode.CANT_CREATE and sorted(seen) == [str(root / "b"), str(root / "c")]
    assert [r["path"] for r in done.rows] == ["a", "b"]  # the page that could not be written has no row
    assert cli("report", str(root), "-o", str(tmp_path / "other")).returncode == ExitCode.DATA  # only the unreadable one left


def _eval_corpus(tmp_path: Path, names: tuple[str, str, str]) -> tuple[Path, Path]:
    """A corpus of three planted sessions named NAMES: good, one whose log is not valid (65 at
    its line 4), and one without the eval.json `--facts file` asks for (2)."""
    from support.eval_corpus import planted_session

    good, bad, bare = (planted_session(tmp_path / "corpus" / n, sid=n) for n in names)
    log = bad / "updates.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3]) + b"{not json}\n" + b"".join(lines[4:]))
    (bare / "eval.json").unlink()
    return tmp_path / "corpus", good


@pytest.mark.parametrize("names", [("a", "b", "c"), ("c", "a", "b"), ("b", "c", "a")])
def test_eval_of_a_root_exits_by_the_rule_and_scores_the_good_session(tmp_path: Path, names: tuple[str, str, str]) -> None:
    import orjson
    from support.eval_corpus import poor_summarizer

    corpus, good = _eval_corpus(tmp_path, names)
    bad_log, bare = corpus / names[1] / "updates.jsonl", corpus / names[2]
    proc = cli("eval", str(corpus), "--facts", "file", "--json")
    assert proc.returncode == ExitCode.DATA, proc.stderr  # 65 outranks 2 whichever session came first
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 2 and "Traceback" not in proc.stderr.decode(), lines
    assert sum(f"{bad_log}:4" in ln for ln in lines) == 1 and sum(str(bare) in ln and "eval.json" in ln for ln in lines) == 1
    (run,) = orjson.loads(proc.stdout)["runs"]
    assert [e["path"] for e in run["per_session"]] == [str(good)] and run["metrics"]["state_recall"] == 1.0

    # Without the bad log: a usage error (2) outranks a check's finding (1: a recall under --min-recall).
    shutil.rmtree(bad_log.parent)
    low = cli("eval", str(corpus), "--facts", "file", "--summarizer", poor_summarizer(tmp_path), "--mode", "summary",
              "--min-recall", "0.9", "--json")
    assert low.returncode == ExitCode.USAGE, low.stderr
    assert b"below --min-recall" in low.stderr and str(bare).encode() in low.stderr
    assert [e["path"] for e in orjson.loads(low.stdout)["runs"][0]["per_session"]] == [str(good)]


def test_eval_facts_only_of_a_root_prints_the_readable_sessions_facts(tmp_path: Path) -> None:
    import orjson

    corpus, good = _eval_corpus(tmp_path, ("a", "b", "c"))
    proc = cli("eval", str(corpus), "--facts-only", "--facts", "file")
    assert proc.returncode == ExitCode.DATA and len(proc.stderr.splitlines()) == 2, proc.stderr
    assert [s["path"] for s in orjson.loads(proc.stdout)["sessions"]] == [str(good)]


@pytest.mark.parametrize("names", [("a", "b", "c"), ("c", "b", "a")])
def test_repair_of_a_root_exits_by_the_rule_whatever_the_order(tmp_path: Path, names: tuple[str, str, str]) -> None:
    """A torn session (a check's finding, repaired when writing), one beyond repair (65) and one
    whose lock another process holds (75)."""
    import subprocess
    import sys

    root = tmp_path / "root"
    torn, bad, busy = (root / n for n in names)
    for s in (torn, bad, busy):
        shutil.copytree(FIXTURES / "sessions" / "demo", s)
    with open(torn / "updates.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":99,"ki')
    (bad / "updates.jsonl").write_bytes(b'{"v":1,"seq":0,"kind":"session"}\nnot json\n' * 3)
    holder = subprocess.Popen([sys.executable, "-c", f"import sys,time; sys.path.insert(0,{str(ROOT)!r}); from catty_ctx.session.store import Session; "
                               f"l=Session.open({str(busy)!r}).lock(); l.__enter__(); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        assert cli("repair", str(root), "--check").returncode == ExitCode.DATA  # 65 outranks the finding
        bad.rename(tmp_path / "aside")
        assert cli("repair", str(root), "--check").returncode == ExitCode.CHECK_FAILED
        (tmp_path / "aside").rename(bad)
        proc = cli("repair", str(root), "--lock-timeout", "0.3")
        assert proc.returncode == ExitCode.DATA, proc.stderr  # 65 outranks 75
        lines = proc.stderr.decode().splitlines()
        assert sum(str(bad) in ln for ln in lines) == 1 and sum(str(busy) in ln for ln in lines) == 1, lines
        assert cli("repair", str(torn), "--check").returncode == 0  # repaired while the others failed
        shutil.rmtree(bad)
        assert cli("repair", str(root), "--lock-timeout", "0.3").returncode == ExitCode.TEMP_FAIL
    finally:
        holder.kill()
        holder.wait()


def test_eval_native_of_a_root_scores_the_readable_sessions(tmp_path: Path) -> None:
    import orjson
    from support.native_corpus import write_corpus

    sessions = write_corpus(tmp_path / "home", sessions=2, seed=11)
    good = sessions[0].path
    lines = good.read_bytes().splitlines(keepends=True)
    bad = good.parent / f"zz{good.name[2:]}"
    bad.write_bytes(b"".join(lines[:2]) + b"{not json\n" + b"".join(lines[2:]))
    proc = cli("eval", "--native", str(tmp_path / "home"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert f"{bad}:3: invalid JSON skipped" in proc.stderr.decode()
    scored = {e["session"] for e in orjson.loads(proc.stdout)["native"]["compactions"]}
    assert {str(good), str(bad)} <= scored
