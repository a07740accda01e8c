"""Native sessions the write-back tests start from, written as Claude Code and Codex write them.

Each holds what makes a real session fail to resume: a call left unanswered mid-way (more
turns follow it), a whitespace-only text block and one very large tool output.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

CWD = "/home/dev/shop"
BIG = 5 * 1024 * 1024
USER_TURNS = ["Find why the cart total is wrong.", "Go on: run the tests.", "Now print the whole log.", "Thanks, summarise."]


def big_output() -> str:
    line = "log line: everything is fine here, nothing to see, moving on\n"
    return (line * (BIG // len(line) + 1))[:BIG - 7] + "THE-END"


def claude_session(folder: Path, session_id: str = "0b5b6c52-1111-4222-8333-444455556666", cwd: str = CWD) -> Path:
    """A Claude Code transcript: prompt, tool call answered, a call left dangling (the session
    went on), a whitespace-only text block, a 5 MB tool output."""
    recs: list[dict[str, Any]] = []
    n = [0]

    def add(rtype: str, message: dict[str, Any], **extra: Any) -> str:
        n[0] += 1
        uid = f"00000000-0000-4000-8000-{n[0]:012d}"
        recs.append({"parentUuid": recs[-1]["uuid"] if recs else None, "isSidechain": False, "userType": "external", "cwd": cwd,
                     "sessionId": session_id, "version": "2.0.14", "type": rtype, "message": message, "uuid": uid,
                     "timestamp": f"2026-10-01T09:{n[0] // 60:02d}:{n[0] % 60:02d}.000Z", **extra})
        return uid

    def assistant(mid: str, content: list[dict[str, Any]]) -> str:
        return add("assistant", {"model": "claude-sonnet-4-5", "id": mid, "type": "message", "role": "assistant", "content": content,
                                 "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 5}}, requestId=f"req_{mid}")

    def result(tid: str, text: str, is_error: bool = False) -> None:
        add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": is_error}]},
            toolUseResult=text)

    add("user", {"role": "user", "content": USER_TURNS[0]})
    assistant("msg_01", [{"type": "text", "text": "Let me read the cart code."},
                         {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": f"{cwd}/cart.py"}}])
    result("toolu_01", "def total(items, coupon=None): ...")
    # A call whose result never came (the session was interrupted), then the user went on.
    assistant("msg_02", [{"type": "text", "text": "I will run the tests to see the failure."},
                         {"type": "tool_use", "id": "toolu_02", "name": "Bash", "input": {"command": "pytest -q"}}])
    add("user", {"role": "user", "content": USER_TURNS[1]})
    assistant("msg_03", [{"type": "text", "text": "  \n "}, {"type": "text", "text": "Running them now."},
                         {"type": "tool_use", "id": "toolu_03", "name": "Bash", "input": {"command": "pytest -q"}}])
    result("toolu_03", "1 failed: test_coupon_once", is_error=True)
    add("user", {"role": "user", "content": USER_TURNS[2]})
    assistant("msg_04", [{"type": "tool_use", "id": "toolu_04", "name": "Bash", "input": {"command": "cat build.log"}}])
    result("toolu_04", big_output())
    add("user", {"role": "user", "content": USER_TURNS[3]})
    assistant("msg_05", [{"type": "text", "text": "The coupon is applied per item; it should apply once."}])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def codex_session(folder: Path, session_id: str = "0199a0aa-1111-7222-8333-444455556666", cwd: str = CWD) -> Path:
    """A Codex rollout: prompt, a call answered, a call left without output (the session went
    on), a whitespace-only assistant text, a 5 MB function output."""
    lines: list[dict[str, Any]] = []
    n = [0]

    def add(ltype: str, payload: dict[str, Any]) -> None:
        n[0] += 1
        lines.append({"timestamp": f"2026-10-02T10:{n[0] // 60:02d}:{n[0] % 60:02d}.000Z", "type": ltype, "payload": payload})

    def user(text: str) -> None:
        add("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        add("event_msg", {"type": "user_message", "message": text, "images": []})

    def assistant(text: str) -> None:
        add("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})

    def call(cid: str, cmd: str) -> None:
        add("response_item", {"type": "function_call", "name": "exec_command", "arguments": orjson.dumps({"cmd": cmd}).decode(), "call_id": cid})

    def output(cid: str, text: str) -> None:
        add("response_item", {"type": "function_call_output", "call_id": cid, "output": text})

    add("session_meta", {"id": session_id, "timestamp": "2026-10-02T10:00:00.000Z", "cwd": cwd, "originator": "codex_cli_rs",
                         "cli_version": "0.46.0", "instructions": None})
    user(USER_TURNS[0])
    assistant("Let me read the cart code.")
    call("call_01", "cat cart.py")
    output("call_01", "def total(items, coupon=None): ...")
    assistant("I will run the tests to see the failure.")
    call("call_02", "pytest -q")  # never answered: the session was interrupted
    user(USER_TURNS[1])
    assistant("  \n ")
    call("call_03", "pytest -q")
    output("call_03", "1 failed: test_coupon_once")
    user(USER_TURNS[2])
    call("call_04", "cat build.log")
    output("call_04", big_output())
    user(USER_TURNS[3])
    assistant("The coupon is applied per item; it should apply once.")
    day = folder / "2026" / "10" / "02"
    day.mkdir(parents=True, exist_ok=True)
    path = day / f"rollout-2026-10-02T10-00-00-{session_id}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    return path
