"""`catty-ctx mcp` answers the handshake before the MCP SDK has loaded (catty_ctx/agents/mcp_start.py):
the quick answer is the one the SDK's own server gives, for every version a client may ask; the
answer does not wait for the SDK's import (held back here by an import hook until the test lets
it go); a first line that is no handshake is the SDK's alone to answer."""
from __future__ import annotations

import io
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import FIXTURES, ROOT, forked_cli

from catty_ctx.agents.mcp_start import HANDSHAKE_VERSIONS, Wire, quick_answer
from catty_ctx.agents.recall import TOOLS, Recall

SESSION = FIXTURES / "agents" / "claude-2.1.332" / "tools-resume-compactions"
CLAUDE_CODE_INFO = {"capabilities": {"roots": {}, "elicitation": {}}, "clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.332"}}


def initialize(rid: Any = 0, version: str = "2025-06-18", **params: Any) -> str:
    given = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}, **params}
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": given}).decode() + "\n"


SDK_ANSWERS = """
import io, json, sys
from catty_ctx.agents.mcp_server import run_sdk
from catty_ctx.agents.mcp_start import Wire
from catty_ctx.agents.recall import Recall
for line in json.loads(sys.stdin.read()):
    out = io.StringIO()
    run_sdk(Recall(given=sys.argv[1]), Wire(io.StringIO(), out, [line]))
    print(json.dumps([json.loads(answer) for answer in out.getvalue().splitlines()]))
"""


def sdk_answers(*lines: str) -> list[list[dict[str, Any]]]:
    """What the SDK's server (mcp_server.run_sdk) writes for each of LINES, given it first and
    none answered before it. In a process of its own: the SDK's event loop leaves its worker
    threads behind, and a test process with threads forks no worker (the usage tests' pools)."""
    proc = subprocess.run([sys.executable, "-c", SDK_ANSWERS, str(SESSION)], input=orjson.dumps(lines), capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=True)
    return [orjson.loads(line) for line in proc.stdout.splitlines()]


def test_the_versions_agreed_here_are_the_sdks() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS and HANDSHAKE_VERSIONS[-1] == LATEST_HANDSHAKE_VERSION


ANSWERED = [*(initialize(version=v) for v in HANDSHAKE_VERSIONS), initialize(version="1999-01-01"), initialize(version="2026-07-28"),
            initialize(rid="a-7"), initialize(rid=2**53), initialize(rid=-1, **CLAUDE_CODE_INFO)]


def test_the_quick_answer_is_the_sdks_and_so_is_its_answer_to_the_replayed_line() -> None:
    quick = [quick_answer(line) for line in ANSWERED]
    assert None not in quick
    answers = [q[0] for q in quick if q]
    asked = sdk_answers(*ANSWERED, *(q[1] for q in quick if q))  # the line as sent, then as replayed (the version agreed asked for)
    assert asked == [[a] for a in answers] * 2


@pytest.mark.parametrize("line", [
    "", "\n", "{not json\n", '{"jsonrpc":"2.0","id":1,"method":"ping"}\n', initialize(rid=None), initialize(rid=True), initialize(rid=1.5),
    initialize(version=5), initialize(capabilities=None), initialize(clientInfo={"name": "t"}),
    orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}, "extra": 1}).decode() + "\n",
    orjson.dumps({"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": {}}).decode() + "\n",
])
def test_any_other_first_line_is_left_to_the_sdk(line: str) -> None:
    assert quick_answer(line) is None


GATE = """
import os, sys, time
class Gate:
    '''Holds the import of the MCP SDK until the file RELEASE exists (at most 60 s, then says so).'''
    def find_spec(self, name, path=None, target=None):
        if name == "mcp.server":  # (not "mcp": the server looks for the package before it answers)
            open(os.environ["HELD"], "w").close()
            for _ in range(600):
                if os.path.exists(os.environ["RELEASE"]):
                    return None
                time.sleep(0.1)
            open(os.environ["TIMED_OUT"], "w").close()
        return None
sys.meta_path.insert(0, Gate())
sys.argv = ["catty-ctx", *sys.argv[1:]]
from catty_ctx.__main__ import main
main()
"""


@contextmanager
def server(program: list[str], **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """The server started by PROGRAM `mcp --session SESSION`, killed if the test leaves it running."""
    proc = subprocess.Popen([*program, "mcp", "--session", str(SESSION)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def send(proc: subprocess.Popen[bytes], *lines: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write("".join(lines).encode())
    proc.stdin.flush()


def ended(proc: subprocess.Popen[bytes]) -> bytes:
    """What the server wrote to stderr, once its input has ended and it has exited 0."""
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    assert proc.wait(60) == 0
    return proc.stderr.read()


def read_answer(proc: subprocess.Popen[bytes], wait: float = 60) -> dict[str, Any]:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], wait)
    assert ready, "no answer"
    return orjson.loads(proc.stdout.readline())


def test_the_handshake_is_answered_while_the_sdks_import_is_held(tmp_path: Path) -> None:
    marks = {k: str(tmp_path / k) for k in ("HELD", "RELEASE", "TIMED_OUT")}
    with server([sys.executable, "-c", GATE], **marks) as proc:
        send(proc, initialize(rid=1, version="2024-11-05", **CLAUDE_CODE_INFO))
        answer = read_answer(proc)
        assert not os.path.exists(marks["RELEASE"])  # the answer came while the SDK could not have loaded
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == "2024-11-05"
        assert answer["result"]["serverInfo"]["name"] == "catty-recall"
        Path(marks["RELEASE"]).touch()
        send(proc, '{"jsonrpc":"2.0","method":"notifications/initialized"}\n', '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
        listed = read_answer(proc)
        assert listed["id"] == 2 and [t["name"] for t in listed["result"]["tools"]] == list(TOOLS)
        assert ended(proc) == b""  # no word of an SDK answer that differed from the quick one
    assert os.path.exists(marks["HELD"]) and not os.path.exists(marks["TIMED_OUT"])


def test_a_first_line_that_is_no_handshake_gets_the_sdks_answer_alone() -> None:
    lines = ['{"jsonrpc":"2.0","id":"p","method":"ping"}\n', initialize(rid=3), '{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
             '{"jsonrpc":"2.0","id":4,"method":"tools/list"}\n']
    with server(forked_cli.command(forked_cli.MCP)) as proc:  # (a process forked from one that has imported the SDK)
        answers = []
        for line in lines:  # one at a time, each answer awaited (the SDK can lose a request pipelined behind its first)
            send(proc, line)
            if '"id"' in line:
                answers.append(read_answer(proc))
        assert ended(proc) == b""
    assert [a["id"] for a in answers] == ["p", 3, 4] and answers[1] == quick_answer(lines[1])[0]  # (the SDK's: the test above)
