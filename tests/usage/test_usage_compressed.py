"""The usage ledger over Codex's compressed rollouts (`rollout-*.jsonl.zst`), read through the zstd program.

The rollouts are the wild Codex fixtures, compressed here by the zstd program as Codex does
(the `.jsonl` removed); the truth is the ledger of the same rollouts uncompressed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import FIXTURES, ROOT

from catty_ctx.usage import pipeline as U
from catty_ctx.usage import filescan

WILD = FIXTURES / "import" / "codex" / "wild"
ZSTD = shutil.which("zstd")
needs_zstd = pytest.mark.skipif(ZSTD is None, reason="the zstd program is not installed")
FIELDS = ("input", "output", "cache_read", "cache_write", "reasoning", "calls")


def codex_home(home: Path) -> list[Path]:
    """A Codex home holding the wild rollouts, uncompressed: their paths. The first is archived
    and has lost its session_meta (its session is then named after its file)."""
    day = home / "sessions" / "2026" / "09" / "19"
    day.mkdir(parents=True)
    (home / "archived_sessions").mkdir()
    (home / "config.toml").write_text("")
    out = []
    for i, src in enumerate(sorted(WILD.glob("*/rollout-*.jsonl"))):
        dest = (home / "archived_sessions" if i == 0 else day) / src.name
        lines = src.read_bytes().splitlines(keepends=True)
        dest.write_bytes(b"".join(x for x in lines if i or b'"session_meta"' not in x))
        out.append(dest)
    return out


def compress(log: Path, *, keep: bool = False) -> Path:
    """LOG compressed by the zstd program beside it, as Codex does (the original removed unless KEEP)."""
    assert ZSTD is not None
    subprocess.run([ZSTD, "-q", *([] if keep else ["--rm"]), "--", str(log)], check=True)
    return log.with_name(log.name + ".zst")


def answer(paths: list[Path], by: str = "model", **kw: Any) -> tuple[dict[str, Any], U.Scan]:
    led, scan = U.usage([str(p) for p in paths], by=by, timezone_name="UTC", **kw)
    return {"rows": [{k: r[k] for k in (by, *FIELDS)} for r in led.rows], "totals": {k: led.totals[k] for k in FIELDS}}, scan


def truth(paths: list[Path], by: str = "model") -> dict[str, Any]:
    return answer(paths, by, use_cache=False)[0]


@needs_zstd
def test_a_codex_home_of_compressed_rollouts_counts_as_its_uncompressed_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "codex"
    logs = codex_home(home)
    want = {by: truth([home], by) for by in ("model", "session", "day")}
    assert want["model"]["totals"]["calls"] > 10
    assert logs[0].name.removesuffix(".jsonl") in [r["session"] for r in want["session"]["rows"]]
    for log in logs:
        compress(log)
    assert not list(home.rglob("*.jsonl")) and len(list(home.rglob("rollout-*.jsonl.zst"))) == len(logs)
    for by, rows in want.items():
        got, scan = answer([home], by, use_cache=False)
        assert got == rows
        assert scan.files == len(logs)
    monkeypatch.setattr(filescan, "PARALLEL_MIN_BYTES", 0)  # forked workers decompress too
    assert answer([home], use_cache=False, jobs=3)[0] == want["model"]
    monkeypatch.undo()
    # the sessions tree alone, and one compressed rollout named as a file
    assert truth([home / "sessions"])["totals"]["calls"] + truth([home / "archived_sessions"])["totals"]["calls"] == \
        want["model"]["totals"]["calls"]
    one = logs[0]
    zst = one.with_name(one.name + ".zst")
    assert U.discover(zst) == [(str(zst), U.CODEX)]
    plain = tmp_path / one.name
    plain.write_bytes(subprocess.run([ZSTD, "-dcq", str(zst)], capture_output=True, check=True).stdout)
    assert truth([zst], "session") == truth([plain], "session")  # (the session a rollout without an id is named after its file)


@needs_zstd
def test_an_unchanged_compressed_rollout_is_served_from_the_per_file_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "codex"
    for log in codex_home(home):
        compress(log)
    want = truth([home])
    first = filescan.scan([str(home)])
    assert first.files_parsed == first.files and not first.from_cache
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))  # no zstd now: a cached entry needs none
    again = filescan.scan([str(home)])
    assert again.files_parsed == 0 and again.from_cache == again.files and again.bad_lines == first.bad_lines
    assert again.records == first.records and first.records
    assert answer([home])[0] == want  # the full pipeline from the caches, without zstd


@needs_zstd
def test_a_changed_compressed_rollout_is_read_again_whole(tmp_path: Path) -> None:
    """Its offsets count decompressed bytes: a .zst that changed is never resumed where it
    stopped, in the full scan nor in the after-append path (`grown`)."""
    home = tmp_path / "codex"
    logs = codex_home(home)
    log = next(p for p in logs if len(p.read_bytes().splitlines()) > 6)
    whole = log.read_bytes()
    head = b"".join(whole.splitlines(keepends=True)[:4])
    for p in logs:
        compress(p)
    zst = log.with_name(log.name + ".zst")
    want_all = truth([home])
    zst.unlink()
    log.write_bytes(whole)
    want_grown = truth([home])  # (only this rollout's calls, in a plain log)
    log.unlink()

    def rewrite(data: bytes) -> None:
        """ZST made of DATA, written over itself (same inode, as an editor or a re-compression in place)."""
        packed = subprocess.run([ZSTD, "-q", "-c"], input=data, capture_output=True, check=True).stdout
        with open(zst, "r+b") as f:
            f.write(packed)
            f.truncate()

    zst.write_bytes(b"")
    rewrite(head)
    ino = zst.stat().st_ino
    cut = answer([home])[0]
    assert cut["totals"]["calls"] < want_all["totals"]["calls"]
    assert answer([home])[0] == cut  # (cached now: answer, per-file entries, the kept fold)
    rewrite(whole)
    assert zst.stat().st_ino == ino
    got, scan = answer([home])
    assert got == want_all == want_grown
    assert scan.bytes_parsed == len(whole) and scan.files_parsed == 1  # read whole, from the start
    rewrite(head)  # changed before where it was read: read again too
    assert answer([home])[0] == cut
    # the full scan's path (no kept fold: --since asks anew)
    rewrite(whole)
    scan = filescan.scan([str(home)])
    assert scan.files_parsed == 1 and scan.bytes_parsed == len(whole)


@needs_zstd
def test_a_rollout_present_both_plain_and_compressed_counts_once(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    logs = codex_home(home)
    want = {by: truth([home], by) for by in ("model", "session")}
    for by, rows in want.items():
        assert answer([home], by)[0] == rows  # (the caches now hold the plain rollouts)
    for log in logs:  # Codex mid-compression: the .zst written, the .jsonl not yet removed
        compress(log, keep=True)
    for by, rows in want.items():
        got, scan = answer([home], by)
        assert got == rows and scan.files == 2 * len(logs)
        assert truth([home], by) == rows
    for log in logs:
        log.unlink()
    assert answer([home])[0] == want["model"]


@needs_zstd
def test_without_the_zstd_program_compressed_rollouts_are_unreadable_files_and_the_rest_still_counts(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    logs = codex_home(home)
    zst = compress(logs[2])
    rest = [p for p in logs if p != logs[2]]
    want = truth(rest)
    assert 0 < want["totals"]["calls"] < truth([home])["totals"]["calls"]  # (the compressed one has calls)
    bare = tmp_path / "bin"  # a PATH with no zstd on it
    bare.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=str(bare))

    def run(*args: str, env: dict[str, str] = env) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "catty_ctx", "usage", str(home), "--timezone", "UTC", *args],
                              capture_output=True, env=env, timeout=120, check=False)

    for _ in range(2):  # (the second run: nothing cached stands for the unread file)
        proc = run("--json")
        assert proc.returncode == 0, proc.stderr
        doc = orjson.loads(proc.stdout)
        assert {k: doc["totals"][k] for k in FIELDS} == want["totals"]
        err = proc.stderr.decode()
        assert f"{zst}: cannot read (compressed with zstd" in err and "install it" in err and "Traceback" not in err
        assert doc["bad_lines"] == _bad_lines(rest) + 1
    proc = run("--strict")
    assert proc.returncode == 65 and proc.stdout == b""
    assert str(zst) in proc.stderr.decode() and "install it" in proc.stderr.decode()
    # with zstd installed, the same files give the whole ledger (no answer was kept without it)
    proc = run("--json", env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0 and {k: orjson.loads(proc.stdout)["totals"][k] for k in FIELDS} == truth([home])["totals"]


def _bad_lines(paths: list[Path]) -> int:
    return U.usage([str(p) for p in paths], use_cache=False)[1].bad_lines


@needs_zstd
def test_a_corrupt_compressed_rollout_is_one_bad_file_named_without_a_traceback(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    logs = codex_home(home)
    day = logs[1].parent
    packed = compress(logs[1])
    cut = day / "rollout-2026-09-19T23-00-00-cut.jsonl.zst"
    cut.write_bytes(packed.read_bytes()[:60])  # a frame cut short
    packed.unlink()
    want = truth([home])  # the rest
    garbage = day / "rollout-2026-09-19T23-30-00-garbage.jsonl.zst"
    garbage.write_bytes(b"not zstd at all\n")
    got, scan = answer([home], use_cache=False)
    assert got == want
    named = [s for s in scan.bad_samples if ".zst: " in s]
    assert sorted(s.split(": ", 1)[0] for s in named) == sorted([str(cut), str(garbage)])
    assert all("cannot read (not a readable zstd file: " in s for s in named)
    assert scan.bad_lines == _bad_lines([home]) == _bad_lines([p for p in logs if p != logs[1]]) + 2
    proc = subprocess.run([sys.executable, "-m", "catty_ctx", "usage", str(home), "--json"], capture_output=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), check=False)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
    assert f"{cut}: cannot read (not a readable zstd file: ".encode() in proc.stderr


def test_the_walk_lists_compressed_rollouts_as_codex_logs_and_nothing_else_compressed(tmp_path: Path) -> None:
    day = tmp_path / "codex" / "sessions" / "2026" / "09" / "19"
    day.mkdir(parents=True)
    (tmp_path / "codex" / "archived_sessions").mkdir()
    for name in ("rollout-a.jsonl", "rollout-b.jsonl.zst", "notes.jsonl.zst", "rollout-c.jsonl.gz"):
        (day / name).write_bytes(b"")
    (tmp_path / "codex" / "archived_sessions" / "rollout-d.jsonl.zst").write_bytes(b"")
    found = U.discover(tmp_path / "codex")
    assert sorted((Path(p).name, k) for p, k in found) == [
        ("rollout-a.jsonl", U.CODEX), ("rollout-b.jsonl.zst", U.CODEX), ("rollout-d.jsonl.zst", U.CODEX)]
    assert U.discover(day / "notes.jsonl.zst") == [(str(day / "notes.jsonl.zst"), None)]  # a file named is read, its kind told by its first line


@needs_zstd
def test_a_compressed_rollout_piped_on_stdin_counts_as_the_file(tmp_path: Path) -> None:
    logs = codex_home(tmp_path / "codex")
    zst = compress(max(logs, key=lambda log: truth([log])["totals"]["calls"]))
    proc = subprocess.run([sys.executable, "-m", "catty_ctx", "usage", "-", "--json", "--timezone", "UTC"], input=zst.read_bytes(),
                          capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, check=True)
    doc = orjson.loads(proc.stdout)
    assert {k: doc["totals"][k] for k in FIELDS} == truth([zst])["totals"] and doc["totals"]["calls"] > 0


@needs_zstd
def test_a_url_root_lists_and_reads_compressed_rollouts(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    home = tmp_path / "codex"
    logs = codex_home(home)
    want = truth([home])
    for log in logs[1:]:
        compress(log)
    led, scan = U.usage([f"file://{home}/sessions", f"file://{home}/archived_sessions"], timezone_name="UTC")
    assert scan.files == len(logs) and {k: led.totals[k] for k in FIELDS} == want["totals"]


@needs_zstd
def test_compressed_rollouts_are_weighed_as_the_work_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .zst is read whole and decompressed: it counts as a larger log when deciding whether
    workers pay, not by its compressed bytes."""
    home = tmp_path / "codex"
    logs = codex_home(home)
    want = truth([home])
    zsts = [compress(log) for log in logs]
    on_disk = sum(z.stat().st_size for z in zsts)
    monkeypatch.setattr(filescan, "PARALLEL_MIN_BYTES", on_disk * 2)  # more than the bytes, less than the work
    # A thread another test left running in this worker would forbid the fork this test is about.
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    forks: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    got, scan = answer([home], jobs=2, use_cache=False)
    assert forks and got == want and scan.files_parsed == len(zsts)
