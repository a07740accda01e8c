"""`usage --json` byte for byte as pinned: speed work changes no answer (docs/usage.md).

The documents of usage_pinned.json were printed by the ledger before its fast paths (workers
walking a cold tree, the shipped price index, the skips of `--since`) were changed, for
every agent's trees: the recorded sessions of fixtures/agents, and generated homes of all five
agents with a bad line, a torn tail, a file of no agent's and a FIFO among them. Each is asked
cold (no cache folder at all: no price index either), warm, without the caches, on one
process and on several, and since a day that most of the logs were last written before.

To pin again after a change that is meant to change an answer:
CATTY_CTX_PIN=write python -m pytest tests/usage/test_usage_pinned.py -p no:xdist
"""
from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import cli
from support.usage_trees import claude_tree, five_agents

from catty_ctx.fleet.workers import can_fork
from catty_ctx.usage import fanout

ROOT = Path(__file__).resolve().parents[2]
PINNED = Path(__file__).with_name("usage_pinned.json")
AGENTS = ROOT / "fixtures" / "agents"
QUESTIONS = {"day": ["--by", "day"], "model": ["--by", "model"], "session": ["--by", "session"], "project": ["--by", "project"],
             "agent": ["--by", "agent"], "week": ["--by", "week"], "since": ["--by", "day", "--since", "20260201"],
             "until": ["--by", "model", "--since", "20260131", "--until", "20260201"]}


def _last_written(root: Path) -> None:
    """Each log's mtime the time of its last record, as the agent writing it left it (so `--since` can
    skip); opencode's storage files their message's time (a part: the first day of the trees)."""
    for doc in root.rglob("storage/*/*/*.json"):
        if not doc.is_file():
            continue  # (the FIFO among them)
        times = orjson.loads(doc.read_bytes()).get("time")
        when = times.get("created", 0) / 1000 if type(times) is dict else 0
        when = when or datetime(2026, 1, 31, tzinfo=timezone.utc).timestamp()
        os.utime(doc, (when, when))
    for log in root.rglob("*.jsonl"):
        last = ""
        for line in log.read_bytes().splitlines()[-5:]:
            try:
                doc = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if type(doc) is dict:
                stamp = doc.get("timestamp") or doc.get("created_at") or ""
                last = max(last, stamp if type(stamp) is str else "")
        try:
            when = datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue  # (no time stamp of the ISO form: left as written)
        os.utime(log, (when, when))


def _generated(root: Path) -> list[str]:
    """Five agents' trees with odd files among them (`five_agents`), a second Claude Code tree and a torn tail."""
    paths = five_agents(root, seed=61, sessions=4, turns=6)[:-1]
    claude_tree(root / "claude", seed=62, projects=2, sessions=3, turns=5)
    torn = next(p for p in sorted((root / "claude" / "projects" / "-home-user-work-proj1").glob("*.jsonl")))
    with open(torn, "ab") as f:
        f.write(b'{"type": "assistant", "timestamp": "2026-02-0')
    _last_written(root)
    return paths


def _trees(root: Path) -> dict[str, list[str]]:
    shutil.copytree(AGENTS, root / "agents", symlinks=True)
    homes = sorted(str(p) for p in (root / "agents").glob("*/*") if p.is_dir())
    generated = _generated(root / "gen")
    return {"agents": homes, "generated": generated, "claude": [generated[0]]}


def _asked(paths: list[str], question: list[str], *more: str) -> str:
    run = cli("usage", *paths, *question, "--json", "--timezone", "UTC", *more)
    assert run.returncode == 0, run.stderr
    return run.stdout.decode()


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    return tmp_path, _trees(tmp_path / "trees")


def _runs(tmp_path: Path, trees: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every tree asked every question in every state: {name: the document, the tree's folder as <tree>}."""
    out: dict[str, str] = {}
    base = str(tmp_path / "trees")
    for name, paths in trees.items():
        for q, question in QUESTIONS.items():
            monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache" / name / q))  # (nothing cached: no price index either)
            for state, more in (("cold", ()), ("warm", ()), ("uncached", ("--no-cache",)), ("one process", ("--no-cache", "--jobs", "1"))):
                out[f"{name} {q} {state}"] = _asked(paths, question, *more).replace(base, "<tree>")
    return out


def _pinned() -> dict[str, Any]:
    """The pinned documents; the test is skipped when the installed price library is not the one
    they were printed with (a new release may change a price: that is an answer meant to change)."""
    from importlib.metadata import version

    pinned: dict[str, Any] = orjson.loads(PINNED.read_bytes())
    printed_with = orjson.loads(next(iter(pinned.values())))["prices"]["version"]
    if os.environ.get("CATTY_CTX_PIN") != "write" and version("genai-prices") != printed_with:
        pytest.skip(f"pinned with genai-prices {printed_with}, {version('genai-prices')} installed: pin again (see the docstring)")
    return pinned


def test_usage_json_is_byte_for_byte_as_pinned(trees: tuple[Path, dict[str, list[str]]], monkeypatch: pytest.MonkeyPatch) -> None:
    _pinned()
    tmp_path, paths = trees
    got = _runs(tmp_path, paths, monkeypatch)
    if os.environ.get("CATTY_CTX_PIN") == "write":
        PINNED.write_bytes(orjson.dumps(got, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    pinned: dict[str, Any] = orjson.loads(PINNED.read_bytes())
    assert sorted(got) == sorted(pinned)
    for case, doc in got.items():
        assert doc == pinned[case], case


def test_usage_json_is_as_pinned_when_the_workers_walk_small_trees(trees: tuple[Path, dict[str, list[str]]],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The cold runs again with the workers' plans a large home gets (folders left to them, runs of two files)."""
    if not can_fork():
        pytest.skip("no worker can be forked here")
    monkeypatch.setattr(fanout, "FEW_FILES", 0)
    monkeypatch.setattr(fanout, "PLAN_TREES", 3)
    monkeypatch.setattr(fanout, "RUN_FILES", 2)
    pinned = _pinned()
    tmp_path, paths = trees
    base = str(tmp_path / "trees")
    for name, tree in paths.items():
        for q in ("day", "session", "since"):
            monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fanned" / name / q))
            assert _asked(tree, QUESTIONS[q]).replace(base, "<tree>") == pinned[f"{name} {q} cold"], f"{name} {q}"
