"""--scheduler: the read-heavy commands on a Dask cluster give the local answer, byte for byte.

The cluster runs are real processes (the CLI in a subprocess forked from one that has imported
Dask, the shared LocalCluster of 2 worker processes in another); the local runs are the same command without --scheduler, in
this process (`cli`: the answer to compare with costs no interpreter).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from support import forked_cli
import orjson
import pytest

from support import FIXTURES, ROOT, cli, msg, session_event, without_timings, write_log
from support.fleet_cluster import QUIET
from support.usage_trees import claude_tree, codex_rollout


def mixed_tree(root: Path, *, extra_sessions: int = 6) -> Path:
    """Catty sessions, a Claude Code tree, a Codex tree, one broken session, one foreign file (and a stray note)."""
    for name in ("demo", "dangling", "torn"):
        shutil.copytree(FIXTURES / "sessions" / name, root / "catty" / name)
    for i in range(extra_sessions):
        write_log(root / "catty" / "more" / f"s{i:03d}", [session_event(f"s-{i}"), msg("user", f"task {i} " * (i + 1), "u"),
                                                          msg("assistant", "done", "a")])
    shutil.copytree(FIXTURES / "bad" / "duplicate-seq", root / "catty" / "broken")
    foreign = root / "catty" / "foreign"
    foreign.mkdir()
    shutil.copyfile(FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl", foreign / "updates.jsonl")
    (root / "catty" / "NOTES.txt").write_text("not a log\n")
    claude_tree(root / "claude", seed=7, projects=2, sessions=3)
    codex_rollout(root / "codex" / "sessions" / "2026" / "02" / "01" / "rollout-a.jsonl", [
        {"ts": "2026-02-01T09:00:00.000Z", "model": "gpt-5-codex",
         "last": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 300, "reasoning_output_tokens": 120}},
    ])
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mixed_tree(tmp_path_factory.mktemp("fleet"))


def _run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """`catty-ctx ARGS` in a process of its own, forked from one that has imported Dask (tests/support/forked_cli.py)."""
    return subprocess.run([*forked_cli.command(forked_cli.DASK), *args], capture_output=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))


def _same(local: Any, remote: Any) -> None:
    assert (remote.returncode, remote.stderr.decode(), remote.stdout.decode()) == (local.returncode, local.stderr.decode(), local.stdout.decode())


COMMANDS = [
    ("usage", "{root}", "--json", "--no-cache"),
    ("usage", "{root}", "--by", "session", "--no-cache"),
    ("inspect", "{root}/catty", "--json"),
    ("inspect", "{root}/catty"),
    ("repair", "--check", "{root}/catty", "--json"),
    ("compact", "--check", "{root}/catty", "--json", "--threshold", "1"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c).replace("{root}", "ROOT"))
def test_each_command_gives_the_local_answer_on_the_cluster(tree: Path, dask_cluster: Any, command: tuple[str, ...]) -> None:
    args = [a.format(root=tree) for a in command]
    local = cli(*args)
    before = dask_cluster.ask("tasks")["transitions"]
    remote = _run(*args, "--scheduler", dask_cluster.address)
    assert dask_cluster.ask("tasks")["transitions"] > before  # the work did run there
    _same(local, remote)
    assert local.returncode in (0, 1, 65)
    if command[0] != "usage":  # the broken session and the foreign file are reported as locally
        assert b"broken" in local.stderr + local.stdout and b"foreign" in local.stderr + local.stdout



def test_eval_gives_the_local_report_on_the_cluster(tmp_path: Path, dask_cluster: Any) -> None:
    corpus = tmp_path / "corpus"
    for name in ("demo", "dangling", "torn"):
        shutil.copytree(FIXTURES / "sessions" / name, corpus / name)
    local = cli("eval", str(corpus), "--json", "--mode", "summary", "--mode", "segments")
    before = dask_cluster.ask("tasks")["transitions"]
    remote = _run("eval", str(corpus), "--json", "--mode", "summary", "--mode", "segments", "--scheduler", dask_cluster.address)
    assert dask_cluster.ask("tasks")["transitions"] > before
    assert (remote.returncode, remote.stderr) == (local.returncode, local.stderr) == (0, local.stderr)
    report = orjson.loads(local.stdout)
    assert len(report["runs"]) == 2 and all(r["sessions"] == 3 for r in report["runs"])
    assert without_timings(orjson.loads(remote.stdout)) == without_timings(report)
    url = f"file://{corpus}"  # the same corpus named by a URL: each worker reads its sessions from copies of its own
    at_url = _run("eval", url, "--json", "--mode", "summary", "--mode", "segments", "--scheduler", dask_cluster.address)
    assert (at_url.returncode, at_url.stderr.decode()) == (0, local.stderr.decode().replace(str(corpus), url))
    assert without_timings(orjson.loads(at_url.stdout)) == without_timings(orjson.loads(local.stdout.decode().replace(str(corpus), url)))


@pytest.mark.parametrize("command", [("usage", "{root}", "--json", "--no-cache"), ("inspect", "{root}/catty", "--json"),
                                     ("repair", "--check", "{root}/catty")], ids=lambda c: c[0])
def test_a_file_url_root_on_the_cluster_reads_as_the_folder(tree: Path, dask_cluster: Any, command: tuple[str, ...]) -> None:
    url = f"file://{tree}"
    local = cli(*(a.format(root=tree) for a in command))
    remote = _run(*(a.format(root=url) for a in command), "--scheduler", dask_cluster.address)
    assert remote.returncode == local.returncode
    assert remote.stdout.decode() == local.stdout.decode().replace(str(tree), url)
    assert remote.stderr.decode() == local.stderr.decode().replace(str(tree), url)
    assert url.encode() in remote.stdout + remote.stderr


def test_a_terminal_shows_the_cluster_run_progress(tmp_path: Path, dask_cluster: Any) -> None:
    from support import cli_on_a_terminal

    for i in range(30):
        shutil.copytree(FIXTURES / "sessions" / "demo", tmp_path / "root" / f"s{i:02d}")
    code, out, err = cli_on_a_terminal("inspect", str(tmp_path / "root"), "--json", "--scheduler", dask_cluster.address)
    assert code == 0, err
    assert b"sessions" in err and b"30/30" in err  # the bar counts the sessions as their tasks come back
    assert len(orjson.loads(out)["sessions"]) == 30


def test_the_scheduler_may_come_from_the_environment(tree: Path, dask_cluster: Any) -> None:
    local = cli("inspect", str(tree / "catty"), "--json")
    before = dask_cluster.ask("tasks")["transitions"]
    remote = _run("inspect", str(tree / "catty"), "--json", env={"CATTY_CTX_SCHEDULER": dask_cluster.address})
    assert dask_cluster.ask("tasks")["transitions"] > before
    _same(local, remote)


def test_a_worker_killed_mid_run_costs_time_not_the_answer(tmp_path: Path, dask_cluster: Any) -> None:
    root = tmp_path / "many"
    for i in range(400):
        write_log(root / f"s{i:04d}", [session_event(f"s-{i}"), *(msg("user" if j % 2 else "assistant", f"line {j} of {i} " * 40, f"m{j}")
                                                                   for j in range(1, 40))])
    local = cli("inspect", str(root), "--json")
    dask_cluster.ask("wait-workers")
    proc = subprocess.Popen([sys.executable, "-m", "catty_ctx", "inspect", str(root), "--json", "--scheduler", dask_cluster.address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    killed = dask_cluster.ask("kill-busy")
    out, err = proc.communicate(timeout=120)
    assert killed["killed"] is not None and killed["tasks"] > 0  # a worker died holding work of this run
    assert killed["killed"] not in dask_cluster.ask("wait-workers")["pids"]  # (a new one took its place)
    assert (proc.returncode, err, out) == (local.returncode, local.stderr, local.stdout)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("address, command", [(f"tcp://127.0.0.1:{_closed_port()}", "inspect"), ("tcp://10.255.255.1:8786", "usage")],
                         ids=["refused", "unroutable"])
def test_an_unreachable_scheduler_exits_69_within_the_timeout(tree: Path, address: str, command: str) -> None:
    args = (command, str(tree / "catty"), "--no-cache") if command == "usage" else (command, str(tree / "catty"))
    start = time.monotonic()
    assert _run(*args, "--scheduler", "local:0").returncode == 2  # the same start-up, refused before any connection
    startup = time.monotonic() - start
    start = time.monotonic()
    proc = _run(*args, "--scheduler", address, "--connect-timeout", "2")
    took = time.monotonic() - start - startup
    assert proc.returncode == 69, proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"catty-ctx: error: scheduler {address} unavailable"), lines
    # The timeout counts from the import of Dask on; the margin is a loaded machine's (an unbounded
    # connect to an unroutable address would take minutes).
    assert took < 2 + 20, took
    assert proc.stdout == b""


def test_an_answer_the_cache_holds_needs_no_cluster(tree: Path) -> None:
    cli("usage", str(tree / "claude"), "--json")
    cached = cli("usage", str(tree / "claude"), "--json")
    assert orjson.loads(cached.stdout)["files_parsed"] == 0  # (served from the answer cache)
    again = _run("usage", str(tree / "claude"), "--json", "--scheduler", f"tcp://127.0.0.1:{_closed_port()}", "--connect-timeout", "1")
    assert (again.returncode, again.stdout) == (0, cached.stdout)


def _plain(out: bytes, root: Path) -> str:
    """OUT with the tree's folder and the compactions' random ids made neutral."""
    import re

    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", out.decode().replace(str(root), "ROOT"))


def test_writers_refuse_a_cluster_unless_allowed(tree: Path) -> None:
    for command in (("repair",), ("compact", "--threshold", "1")):
        refused = cli(*command, str(tree / "catty"), "--scheduler", "tcp://127.0.0.1:1")
        assert refused.returncode == 2 and refused.stdout == b""
        assert "--allow-remote-writes" in refused.stderr.decode()
    assert _run("repair", "--check", str(tree / "catty"), "--json", "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "0.1").returncode == 69


def test_writers_allowed_on_the_cluster_write_what_they_write_locally(tmp_path: Path, dask_cluster: Any) -> None:
    here = mixed_tree(tmp_path / "here")
    there = mixed_tree(tmp_path / "there")
    for command in (("repair",), ("compact", "--threshold", "1")):
        local = cli(*command, str(here / "catty"), "--json")
        remote = _run(*command, str(there / "catty"), "--json", "--scheduler", dask_cluster.address, "--allow-remote-writes")
        assert remote.returncode == local.returncode
        assert _plain(remote.stdout, there) == _plain(local.stdout, here)
        assert _plain(remote.stderr, there) == _plain(local.stderr, here)
    assert _plain(cli("repair", "--check", str(there / "catty"), "--json").stdout, there) == \
        _plain(cli("repair", "--check", str(here / "catty"), "--json").stdout, here)


def test_scheduler_option_errors_are_usage_errors(tree: Path, tmp_path: Path) -> None:
    bad = cli("inspect", str(tree / "catty"), "--scheduler", "local:0")
    assert bad.returncode == 2 and b"local:N" in bad.stderr
    assert cli("usage", str(tree), "--connect-timeout", "0").returncode == 2
    # Without the extra installed: exit 2 naming it (a package that fails to import stands in for a missing one).
    shadow = tmp_path / "shadow" / "distributed"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed')\n")
    for args in (("inspect", str(tree / "catty")), ("usage", str(tree), "--no-cache")):
        proc = subprocess.run([sys.executable, "-m", "catty_ctx", *args, "--scheduler", "local:1"], capture_output=True, timeout=60,
                              env=dict(os.environ, PYTHONPATH=f"{tmp_path / 'shadow'}{os.pathsep}{ROOT}"))
        assert proc.returncode == 2
        assert proc.stderr.decode().strip() == "catty-ctx: error: --scheduler needs Dask: install the extra catty-ctx[dask]"


def test_local_n_starts_a_cluster_for_the_run(tree: Path) -> None:
    local = cli("repair", "--check", str(tree / "catty"), "--json")
    _same(local, _run("repair", "--check", str(tree / "catty"), "--json", "--scheduler", "local:1"))


@pytest.mark.long
def test_a_cluster_started_from_the_shell(tree: Path) -> None:
    """`dask scheduler --port P` and `dask worker tcp://127.0.0.1:P --nworkers 2`, as a user would start them."""
    port = _closed_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), **QUIET)
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"] if shutil.which("dask") is None else ["dask", "scheduler"]
    worker = [sys.executable, "-m", "distributed.cli.dask_worker"] if shutil.which("dask") is None else ["dask", "worker"]
    procs = [subprocess.Popen([*dask, "--port", str(port), "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the scheduler listening
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        alone = _run("usage", str(tree), "--scheduler", f"tcp://127.0.0.1:{port}", "--no-cache", "--connect-timeout", "3")
        assert alone.returncode == 69 and alone.stdout == b""  # a scheduler without workers: not a run that waits forever
        # One line naming the scheduler and the 3 s: "has no worker" once connected, "unavailable" when the
        # handshake itself took the 3 s (a loaded machine): which one is a matter of timing.
        said = alone.stderr.decode()
        assert said.count("\n") == 1 and said.startswith(f"catty-ctx: error: scheduler tcp://127.0.0.1:{port} ") and "3 s" in said, said
        procs.append(subprocess.Popen([*worker, f"tcp://127.0.0.1:{port}", "--nworkers", "2", "--no-dashboard"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        local = cli("usage", str(tree), "--json", "--no-cache")
        remote = _run("usage", str(tree), "--scheduler", f"tcp://127.0.0.1:{port}", "--json", "--no-cache", "--connect-timeout", "30")
        _same(local, remote)
        assert orjson.loads(remote.stdout)["totals"]["calls"] > 0
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
