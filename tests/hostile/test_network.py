"""A hostile model endpoint cannot hold compact, flood its memory, or lure the key elsewhere;
a scheduler port that accepts and stays silent ends the run with exit 69 within --connect-timeout.

Real HTTP servers on 127.0.0.1 and 127.0.0.2 (tests/support/malicious_endpoint.py) and real catty-ctx
processes, whose peak memory is read from the kernel (wait4).
"""
from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import orjson
import pytest

from catty_ctx.compact.ladder import Deterministic, Transient
from catty_ctx.compact.transport import post
from catty_ctx.eval.facts import Fact
from catty_ctx.eval.judge import Judge, JudgeError
from support import forked_cli
from support import ROOT, msg, session_event, write_log
from support.malicious_endpoint import (
    Endpoint,
    SilentListener,
    drip,
    drip_headers,
    endless_json,
    endless_line,
    flood,
    good,
    no_proxy_env,
    redirect,
)

KEY = "sk-proj-hostileTESTkey0123456789abcdef"
MEMORY_LIMIT = 200 << 20


def _session(path: Path) -> Path:
    return write_log(path, [session_event(), msg("system", "sys"), msg("user", "Keep the build green. " * 40, "u1"),
                            msg("assistant", "On it.", "a1")])


# Runs catty-ctx, then writes the process's peak resident memory (VmHWM, counted from its own
# start: rusage would count the pages of the forking test worker) to the file argv[1] names.
PEAK = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def peak():
    kb = next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    open(out, "w").write(kb)
atexit.register(peak)
sys.argv[0] = "catty-ctx"
runpy.run_module("catty_ctx", run_name="__main__")
"""


def _compact(session: Path, base_url: str, *args: str) -> tuple[int, bytes, bytes, float, int]:
    """compact SESSION with openai:m against BASE_URL in its own process: exit code, stdout,
    stderr, seconds taken and peak resident bytes."""
    env = no_proxy_env(PYTHONPATH=str(ROOT), OPENAI_BASE_URL=base_url, OPENAI_API_KEY=KEY, CATTY_CTX_RETRY_BACKOFF="0")
    peak = session.parent / "peak"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", PEAK, str(peak), "compact", str(session), "--force", "--json",
                           "--summarizer", "openai:m", *args], capture_output=True, env=env)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start, int(peak.read_text()) * 1024


@pytest.mark.parametrize("answer", [drip, drip_headers], ids=["drip-body", "drip-headers"])
def test_a_dripping_server_is_cut_at_the_total_deadline(tmp_path: Path, answer: Callable[..., None]) -> None:
    s = _session(tmp_path / "s")
    before = (s / "updates.jsonl").read_bytes()
    with Endpoint(answer) as srv:
        code, _out, err, took, _rss = _compact(s, srv.url, "--timeout", "1")
    # Three attempts of 1 s each (no backoff), then the summariser gives up: the drip never ends on its own,
    # and no single read waits long enough for a per-read timeout to cut it. Each attempt's own
    # measure (in the saved request) is the 1 s; the whole run's clock, start-up included, only
    # has to be finite (a loaded machine stretches start-up by seconds).
    assert len(srv.requests) == 3 and took < 3 * 1 + 30, (took, err)
    (saved,) = (s / "compaction_requests").glob("*.json")
    attempts = orjson.loads(saved.read_bytes())["attempts"]
    assert [a["outcome"] for a in attempts] == ["transient"] * 3
    assert all(a["timings"]["total_ms"] < 1000 + 2000 for a in attempts), attempts
    assert code == 75 and b"no complete answer within 1s (--timeout)" in err and err.count(b"\n") == 1
    assert (s / "updates.jsonl").read_bytes() == before  # nothing committed


def test_the_compaction_deadline_cuts_a_dripping_call_and_commits_the_offline_summary(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    with Endpoint(drip) as srv:
        code, out, err, took, _rss = _compact(s, srv.url, "--deadline", "2")  # the call's own --timeout: 300 s
    assert code == 0 and took < 2 + 30, (took, err)  # the 2 s deadline, not the 300 s (start-up included: a loaded machine's margin)
    assert orjson.loads(out)["status"] == "compacted" and len(srv.requests) == 1


@pytest.mark.parametrize("answer", [flood, endless_line, endless_json], ids=["flood", "endless-line", "endless-json"])
def test_an_endless_answer_is_cut_at_the_cap_in_bounded_memory(tmp_path: Path, answer: Callable[..., None]) -> None:
    s = _session(tmp_path / "s")
    with Endpoint(answer) as srv:
        code, _out, err, took, rss = _compact(s, srv.url, "--timeout", "60")
    assert rss < MEMORY_LIMIT, rss
    assert code == 65 and b"answer over 33554432 bytes (--max-response-bytes), cut" in err, err
    assert len(srv.requests) == 1 and took < 30  # a cut answer is not retried: the server would only do it again


def test_the_cap_is_an_option(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    with Endpoint(flood) as srv:
        code, _out, err, _took, _rss = _compact(s, srv.url, "--max-response-bytes", "100000")
    assert code == 65 and b"answer over 100000 bytes" in err


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_no_redirect_to_another_origin_is_followed_and_the_key_never_leaves(tmp_path: Path, status: int) -> None:
    s = _session(tmp_path / "s")
    before = (s / "updates.jsonl").read_bytes()
    with Endpoint(good, host="127.0.0.2") as thief:
        with Endpoint(redirect(f"{thief.url}/chat/completions", status)) as srv:
            code, _out, err, _took, _rss = _compact(s, srv.url)
    assert thief.requests == [] and len(srv.requests) == 1
    assert code == 65 and b"redirect to http://127.0.0.2:" in err and b"not followed" in err
    assert KEY.encode() not in err and (s / "updates.jsonl").read_bytes() == before
    artifacts = list((s / "compaction_requests").glob("*.json"))
    assert all(KEY.encode() not in a.read_bytes() for a in artifacts)


def test_a_redirect_to_the_same_host_on_another_port_is_another_origin(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    with Endpoint(good) as other:
        with Endpoint(redirect(f"{other.url}/chat/completions")) as srv:
            code, _out, _err, _took, _rss = _compact(s, srv.url)
    assert other.requests == [] and code == 65


def test_a_307_within_the_origin_is_followed_with_the_body(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    with Endpoint(redirect("/v2/chat/completions"), routes={"/v2/chat/completions": good}) as srv:
        code, out, err, _took, _rss = _compact(s, srv.url)
    assert code == 0, err
    assert [r["path"] for r in srv.requests] == ["/v1/chat/completions", "/v2/chat/completions"]
    assert srv.requests[1]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert orjson.loads(out)["status"] == "compacted"


def test_the_judge_follows_no_redirect_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in no_proxy_env(OPENAI_API_KEY=KEY).items():
        monkeypatch.setenv(k, v)
    with Endpoint(good, host="127.0.0.2") as thief:
        with Endpoint(redirect(f"{thief.url}/chat/completions", 302)) as srv:
            monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
            judge = Judge("openai:m", timeout=5)
            with pytest.raises(JudgeError, match="not followed"):
                judge.check([{"seq": 1, "role": "user", "text": "always run the tests"}], [Fact("instruction", "always run the tests")])
    assert thief.requests == [] and len(srv.requests) == 1


def test_the_judge_has_the_total_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in no_proxy_env(OPENAI_API_KEY=KEY).items():
        monkeypatch.setenv(k, v)
    with Endpoint(drip) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        judge = Judge("openai:m", timeout=1.0)
        start = time.monotonic()
        with pytest.raises(JudgeError, match="within 1s"):
            judge.ask("context", Fact("detail", "the port is 8080"))
    assert time.monotonic() - start < 1 + 10  # the drip never ends: any bound shows the deadline cut it (a loaded machine's margin)


def test_the_transport_bounds_every_phase_of_one_request() -> None:
    # Connection refused, silence, and a drip: each a Transient within the deadline.
    with SilentListener() as silent:
        start = time.monotonic()
        with pytest.raises(Transient, match="within 0.5s"):
            post(f"http://127.0.0.1:{silent.port}/v1/chat/completions", b"{}", {}, timeout=0.5, max_bytes=1000)
        assert time.monotonic() - start < 0.5 + 10  # the listener never answers (a loaded machine's margin)
    with Endpoint(flood) as srv:
        with pytest.raises(Deterministic, match="over 1000 bytes"), post(f"{srv.url}/chat/completions", b"{}", {}, timeout=5, max_bytes=1000) as a:
            list(a.lines())


def test_a_password_in_the_base_url_is_never_shown_or_stored(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    with Endpoint(redirect("http://127.0.0.2:9/v1/chat/completions")) as srv:
        url = srv.url.replace("http://", "http://svc:hunter2-URL-SECRET@")
        code, _out, err, _took, _rss = _compact(s, url)
    assert code == 65 and b"hunter2-URL-SECRET" not in err and b"127.0.0.1" in err and b"not followed" in err
    assert srv.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"  # the key given wins over the URL's user
    for artifact in (s / "compaction_requests").glob("*.json"):
        assert b"hunter2-URL-SECRET" not in artifact.read_bytes()


def test_the_user_of_the_base_url_is_basic_auth_to_that_origin_only(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    with Endpoint(good) as srv:
        url = srv.url.replace("http://", "http://svc:hunter2-URL-SECRET@")
        env = no_proxy_env(PYTHONPATH=str(ROOT), OPENAI_BASE_URL=url, CATTY_CTX_RETRY_BACKOFF="0")
        env.pop("OPENAI_API_KEY", None)
        proc = subprocess.run([sys.executable, "-m", "catty_ctx", "compact", str(s), "--force", "--summarizer", "openai:m"],
                              capture_output=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert srv.requests[0]["headers"]["Authorization"] == "Basic " + base64.b64encode(b"svc:hunter2-URL-SECRET").decode()
    assert all(b"hunter2-URL-SECRET" not in f.read_bytes() for f in (s / "compaction_requests").glob("*.json"))


def test_a_silent_scheduler_port_is_exit_69_within_the_connect_timeout(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    root = tmp_path / "root"
    _session(root / "a")
    _session(root / "b")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    program = forked_cli.command(forked_cli.DASK)  # a run forked from a process that imported Dask, started before any clock

    def inspect(port: int) -> tuple[subprocess.CompletedProcess[bytes], float]:
        start = time.monotonic()
        proc = subprocess.run([*program, "inspect", str(root), "--scheduler", f"tcp://127.0.0.1:{port}",
                               "--connect-timeout", "2"], capture_output=True, env=env, timeout=120)
        return proc, time.monotonic() - start

    with SilentListener() as silent:
        proc, took = inspect(silent.port)
        assert silent.accepted  # the port was reached: it is the handshake that never came
    # One line naming the scheduler: "no answer within 2 s" once connected (the handshake never comes);
    # a machine too loaded to finish the connection itself within the 2 s gets Dask's "Timed out trying
    # to connect" instead: which of the two is a matter of timing.
    said = proc.stderr.decode()
    assert proc.returncode == 69 and said.count("\n") == 1, said
    assert said.startswith(f"catty-ctx: error: scheduler tcp://127.0.0.1:{silent.port} unavailable: "), said
    assert "no answer within 2 s (--connect-timeout)" in said or "Timed out trying to connect" in said, said
    # As long as a refused connection takes (Dask retries it for the whole timeout), whatever the machine's load.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        refused, took_refused = inspect(closed.getsockname()[1])
    assert refused.returncode == 69
    assert took < max(took_refused, 2) + 3, (took, took_refused)
