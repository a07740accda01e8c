"""A cold run's walk shared among the workers (usage/fanout.py) finds and reads what the walk and the scan do one after the other."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.usage_trees import five_agents

from catty_ctx.usage import pipeline as U
from catty_ctx.usage import fanout, filescan, walk
from catty_ctx.fleet.workers import can_fork


@pytest.fixture
def small_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans as a large home gets them: folders left to the workers, several runs of files."""
    monkeypatch.setattr(fanout, "FEW_FILES", 0)
    monkeypatch.setattr(fanout, "PLAN_TREES", 3)
    monkeypatch.setattr(fanout, "RUN_FILES", 2)
    if not can_fork():
        pytest.skip("no worker can be forked here")


def test_the_workers_walk_finds_the_survey_and_reads_the_scan(tmp_path: Path, small_plans: None) -> None:
    paths = five_agents(tmp_path)
    theirs = walk.Listings()
    found = walk.survey(paths, theirs)
    scan = filescan.scan(found, use_cache=False, jobs=1)
    mine = walk.Listings()
    got = fanout.survey_and_scan(paths, mine, jobs=2)
    assert got is not None
    fanned, ran = got
    assert fanned == found  # (paths, kinds, keys, in the walk's order; a log under two PATHs once)
    assert sum(len(files) for _arg, files in found) > 40
    assert mine.seen.keys() == theirs.seen.keys()
    assert all(mine.seen[f][2:] == theirs.seen[f][2:] for f in mine.seen)
    again = filescan.scan(fanned, use_cache=False, jobs=1, ran=ran)
    assert again.records == scan.records and len(scan.records) > 40
    assert (again.calls_read, again.files, again.files_parsed, again.bytes_parsed, again.bad_lines, again.bad_samples, again.not_logs) == \
        (scan.calls_read, scan.files, scan.files_parsed, scan.bytes_parsed, scan.bad_lines, scan.bad_samples, scan.not_logs)
    assert set(ran[1]) == {path for _arg, files in found for path, *_ in files}  # (every entry packed for the per-file cache)
    apart = paths[:-1]  # (no PATH inside another)
    got = fanout.survey_and_scan(apart, walk.Listings(), jobs=2)
    assert got is not None and got[0] == walk.survey(apart)
    assert filescan.scan(got[0], use_cache=False, jobs=1, ran=got[1]).records == filescan.scan(apart, use_cache=False, jobs=1).records


def test_a_cold_run_fanned_out_answers_and_caches_as_the_ordinary_one(tmp_path: Path, small_plans: None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    paths = five_agents(tmp_path / "tree")
    used: list[bool] = []
    real = fanout.survey_and_scan

    def spy(*args: Any, **kw: Any) -> Any:
        got = real(*args, **kw)
        used.append(got is not None)
        return got

    monkeypatch.setattr(fanout, "survey_and_scan", spy)

    def answer(cache: str, **kw: Any) -> tuple[dict[str, Any], Any]:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / cache))
        led, scan = U.usage(paths, by="session", timezone_name="UTC", allow_empty=True, **kw)  # (the last PATH: logs of the first)
        return led.document(scan), scan

    ordinary, _ = answer("a", jobs=1)  # (one process: the ordinary walk, then the scan)
    assert used == [False]
    fanned, scan = answer("b")
    assert used == [False, True] and scan.files_parsed == scan.files
    assert fanned == ordinary
    # The caches it wrote serve the next runs as the ordinary run's do: unchanged, and after an append.
    warm_a, warm_b = answer("a")[0], answer("b")[0]
    assert warm_a == warm_b and warm_b["files_parsed"] == 0 and used == [False, True]
    log = next(Path(paths[1]).rglob("rollout-*.jsonl"))
    with open(log, "ab") as f:
        f.write(log.read_bytes().splitlines()[-1] + b"\n")
    assert answer("a")[0] == answer("b")[0]
    shutil.rmtree(tmp_path / "b")
    assert answer("b", use_cache=False)[0]["rows"] == answer("a")[0]["rows"] and used[-1] is True
