"""The cluster engine's rules that need no cluster: which scheduler, how outcomes travel, writers refused.

(The runs on a real cluster are in tests/cli/test_fleet_cli.py, in processes of their own.)
"""
from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest

from catty_ctx.fleet import cluster
from catty_ctx.errors import CattyError, DataError, ExitCode, UsageError
from support import FIXTURES, cli, without_timings
from support.usage_trees import claude_tree


def test_the_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cluster.SCHEDULER_ENV, raising=False)
    assert cluster.scheduler_from(None) is None
    monkeypatch.setenv(cluster.SCHEDULER_ENV, "tcp://sched:8786")
    assert cluster.scheduler_from(None) == "tcp://sched:8786"
    assert cluster.scheduler_from("local:2") == "local:2"
    monkeypatch.setenv(cluster.SCHEDULER_ENV, "  ")
    assert cluster.scheduler_from(None) is None  # an empty variable asks for nothing
    with cluster.engine_for(None) as engine:
        assert engine is None


def test_local_takes_a_worker_count() -> None:
    assert cluster.parse_local("local:3") == 3
    assert cluster.parse_local("local") >= 1
    assert cluster.parse_local("tcp://127.0.0.1:8786") is None
    for bad in ("local:0", "local:x", "local:-1", "local:"):
        with pytest.raises(UsageError, match="local:N"):
            cluster.parse_local(bad)


def test_writers_need_the_flag() -> None:
    with pytest.raises(UsageError, match="--allow-remote-writes") as err:
        cluster.refuse_writes("repair ROOT", False)
    assert err.value.exit_code == ExitCode.USAGE == 2
    cluster.refuse_writes("repair ROOT", True)
    assert cluster.Unavailable("x").exit_code == ExitCode.UNAVAILABLE == 69


@pytest.mark.parametrize("command", [("inspect", "{s}", "--json"), ("repair", "--check", "{s}", "--json"), ("compact", "--check", "{s}", "--json")],
                         ids=lambda c: " ".join(c[:2]))
def test_one_session_is_read_here_and_the_scheduler_never_contacted(tmp_path: Path, command: tuple[str, ...]) -> None:
    # The unit of work is a ROOT's session: one SESSION is read as without --scheduler, even
    # when nothing listens at the address (contacting it would end the run with exit 69).
    session = tmp_path / "s"
    shutil.copytree(FIXTURES / "sessions" / "demo", session)
    args = [a.format(s=session) for a in command]
    here = cli(*args)
    asked = cli(*args, "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1")
    assert asked.returncode == here.returncode != ExitCode.UNAVAILABLE
    assert (asked.stdout, asked.stderr) == (here.stdout, here.stderr)


def _check(item: int, *, limit: int) -> int:
    sys.stderr.write(f"looking at {item}\n")
    if item > limit:
        raise DataError("too big", path=f"item-{item}", line=item)
    if item < 0:
        raise ZeroDivisionError("a bug")
    return item * 2


def test_a_batch_brings_back_values_bad_input_and_what_was_written(monkeypatch: pytest.MonkeyPatch) -> None:
    worker_stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", worker_stderr)
    got = cluster._run_batch(_check, [1, 5, -1], {"limit": 3})
    assert got == [(0, 2, "looking at 1\n"), (1, ("item-5:5: too big", 65), "looking at 5\n"), (2, "ZeroDivisionError: a bug", "looking at -1\n")]
    assert worker_stderr.getvalue() == ""  # kept for the client, not printed on the worker
    sys.stderr.write("not a task's\n")
    assert worker_stderr.getvalue() == "not a task's\n"

    client_stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", client_stderr)
    assert cluster._outcome(*got[0]) == 2
    bad = cluster._outcome(*got[1])
    assert isinstance(bad, CattyError) and str(bad) == "item-5:5: too big" and bad.exit_code == 65
    with pytest.raises(cluster.RemoteBug, match="ZeroDivisionError: a bug"):
        cluster._outcome(*got[2])
    assert client_stderr.getvalue() == "looking at 1\nlooking at 5\nlooking at -1\n"  # replayed where the local run prints it


def test_each_runs_here_without_an_engine_and_keeps_bad_input_as_a_value(tmp_path: Path) -> None:
    from catty_ctx.inspect.session import root_row

    sessions = [FIXTURES / "sessions" / "demo", FIXTURES / "bad" / "duplicate-seq"]
    (first, row), (second, error) = cluster.each(root_row, sessions)
    assert first == sessions[0] and row["events"] > 0 and row["path"] == str(sessions[0])
    assert second == sessions[1] and isinstance(error, CattyError) and "duplicate-seq/updates.jsonl:" in str(error)


# -- fsspec URL ROOTs -----------------------------------------------------------------------


@pytest.fixture
def memory_root(tmp_path: Path) -> tuple[str, Path]:
    """The same sessions twice: in a folder on disk and under a memory:// URL (this process's own store)."""
    import fsspec

    local = tmp_path / "root"
    for name in ("demo", "dangling", "torn"):
        shutil.copytree(FIXTURES / "sessions" / name, local / "s" / name)
    shutil.copytree(FIXTURES / "bad" / "duplicate-seq", local / "s" / "broken")
    (local / "s" / "NOTES.txt").write_text("not a log\n")
    claude_tree(local / "claude", seed=3, projects=1, sessions=2)
    fs = fsspec.filesystem("memory")
    url = f"memory://fleet-{tmp_path.name}"
    for p in sorted(local.rglob("*")):
        if p.is_file():
            fs.pipe(f"{url}/{p.relative_to(local).as_posix()}", p.read_bytes())
    yield url, local
    fs.rm(url, recursive=True)


@pytest.mark.parametrize("command", [("inspect", "{root}/s", "--json"), ("inspect", "{root}/s"), ("repair", "--check", "{root}/s", "--json"),
                                     ("compact", "--check", "{root}/s", "--threshold", "1"), ("usage", "{root}", "--json", "--by", "session"),
                                     ("usage", "{root}/s"), ("usage", "{root}/s", "--strict")], ids=lambda c: " ".join(c).replace("{root}", "ROOT"))
def test_a_memory_url_root_reads_as_the_same_folder_on_disk(memory_root: tuple[str, Path], command: tuple[str, ...]) -> None:
    url, local = memory_root
    on_disk = cli(*(a.format(root=local) for a in command))
    at_url = cli(*(a.format(root=url) for a in command))
    assert at_url.returncode == on_disk.returncode
    assert at_url.stdout.decode() == on_disk.stdout.decode().replace(str(local), url)
    assert at_url.stderr.decode() == on_disk.stderr.decode().replace(str(local), url)
    assert url.encode() in at_url.stdout + at_url.stderr


def test_url_roots_are_read_only_and_must_be_roots(memory_root: tuple[str, Path]) -> None:
    url, _ = memory_root
    for command in (("repair", f"{url}/s"), ("compact", f"{url}/s", "--threshold", "1")):
        proc = cli(*command)
        assert proc.returncode == 2 and b"use --check or --dry-run" in proc.stderr and proc.stdout == b""
    dry = cli("compact", f"{url}/s", "--dry-run", "--threshold", "1")
    assert dry.returncode == 65 and b"broken/updates.jsonl:4" in dry.stderr and b"would_compact" in dry.stdout
    one = cli("inspect", f"{url}/s/demo")
    assert one.returncode == 2 and b"names a ROOT of sessions" in one.stderr
    gone = cli("inspect", f"{url}/nothing-here")
    assert gone.returncode == 2 and gone.stderr.decode().strip() == f"catty-ctx: error: {url}/nothing-here: no such folder"


@pytest.mark.parametrize("url, package", [("s3://bucket/agents", "s3fs"), ("gs://bucket/agents", "gcsfs")])
def test_a_scheme_without_its_package_names_the_package(url: str, package: str) -> None:
    import importlib.util

    if importlib.util.find_spec(package) is not None:
        pytest.skip(f"{package} is installed here")
    for args in (("inspect", url), ("usage", url), ("repair", "--check", url)):
        proc = cli(*args)
        assert proc.returncode == 2
        assert proc.stderr.decode().strip() == f"catty-ctx: error: {url}: {url.split(':')[0]}:// URLs need the package {package} (pip install {package})"



def test_eval_reads_a_memory_url_corpus_as_the_folder(memory_root: tuple[str, Path]) -> None:
    import orjson

    url, local = memory_root
    shutil.rmtree(local / "s" / "broken")
    import fsspec

    fsspec.filesystem("memory").rm(f"{url}/s/broken", recursive=True)
    on_disk = cli("eval", str(local / "s"), "--json", "--mode", "summary")
    at_url = cli("eval", f"{url}/s", "--json", "--mode", "summary")
    assert (at_url.returncode, at_url.stderr.decode()) == (on_disk.returncode, on_disk.stderr.decode().replace(str(local), url)) == (0, at_url.stderr.decode())
    report = orjson.loads(on_disk.stdout)
    assert report["runs"][0]["sessions"] == 3
    assert without_timings(orjson.loads(at_url.stdout)) == without_timings(orjson.loads(on_disk.stdout.decode().replace(str(local), url)))


def test_a_url_root_finds_the_sessions_a_local_root_finds(tmp_path: Path) -> None:
    """One rule for both walks: no session inside a session's own folders, no staging folder."""
    import fsspec

    from catty_ctx.sources import root_sessions
    from catty_ctx.fleet.urls import url_sessions

    tree = tmp_path / "tree"
    for rel in ("b/s2", "a/s1", "a/s1/segments/old", "a/.s3.fork-1a2b.tmp", "a-x/s4"):
        (tree / rel).mkdir(parents=True)
        (tree / rel / "updates.jsonl").write_bytes(b"")
    mem = fsspec.filesystem("memory")
    mem.put(str(tree), "/walk-rule", recursive=True)
    try:
        local = [p.relative_to(tree).as_posix() for p in root_sessions(tree)]
        remote = [u.removeprefix("memory://walk-rule/") for u in url_sessions("memory://walk-rule")]
        assert local == remote == ["a/s1", "a-x/s4", "b/s2"]
    finally:
        mem.rm("/walk-rule", recursive=True)
