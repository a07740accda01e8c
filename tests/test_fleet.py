"""The cluster engine's rules that need no cluster: which scheduler, how outcomes travel, writers refused.

(The runs on a real cluster are in tests/cli/test_fleet_cli.py, in processes of their own.)
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from catty_ctx import cluster
from catty_ctx.errors import CattyError, DataError, ExitCode, UsageError
from conftest import FIXTURES


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
    from catty_ctx.inspect import root_row

    sessions = [FIXTURES / "sessions" / "demo", FIXTURES / "bad" / "duplicate-seq"]
    (first, row), (second, error) = cluster.each(root_row, sessions)
    assert first == sessions[0] and row["events"] > 0 and row["path"] == str(sessions[0])
    assert second == sessions[1] and isinstance(error, CattyError) and "duplicate-seq/updates.jsonl:" in str(error)
