"""The API families on their own: a request read as items, the native fixes repair makes, the
answer read from a stream, the session-key table (docs/proxy.md#what-it-understands)."""
from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

pytest.importorskip("aiohttp")

from support.proxy_checks import anthropic_problems, responses_problems
from support.proxy_run import proxy_env

from catty_ctx.proxy.anthropic import ANTHROPIC
from catty_ctx.proxy.families import conversation_key
from catty_ctx.proxy.lifecycle import repair_plan
from catty_ctx.proxy.openai import CHAT, RESPONSES
from catty_ctx.proxy.sse import SSEReader
from catty_ctx.view.pairing import ANSWER_TEXT


def repaired(fam, body):
    drops, answers, fixes = repair_plan(fam.parse(body))
    fam.fix(body, drops, answers, ANSWER_TEXT)
    return fixes


def test_anthropic_dangling_orphan_and_duplicate_are_fixed_in_the_copy_only_where_needed() -> None:
    body = {"system": "S", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "two calls"}, {"type": "tool_use", "id": "a", "name": "Bash", "input": {}},
                                          {"type": "tool_use", "id": "b", "name": "Bash", "input": {}},
                                          {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
                                          {"type": "web_search_tool_result", "tool_use_id": "srv", "content": []}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"},
                                     {"type": "tool_result", "tool_use_id": "a", "content": "ok again"},
                                     {"type": "tool_result", "tool_use_id": "zzz", "content": "orphan"},
                                     {"type": "text", "text": "and then", "cache_control": {"type": "ephemeral"}}]},
    ]}
    fixes = repaired(ANTHROPIC, body)
    assert sorted(fixes) == [("dangling_call", "b"), ("duplicate_result", "a"), ("orphan_result", "zzz")]
    assert anthropic_problems(body) == []
    user = body["messages"][2]["content"]
    assert [b.get("tool_use_id") or b["type"] for b in user] == ["a", "b", "text"]
    assert user[0]["content"] == "ok again" and user[1]["content"] == ANSWER_TEXT and user[1]["is_error"] is True
    assert user[2]["cache_control"] == {"type": "ephemeral"}  # the breakpoint stays on its block
    assert body["messages"][1]["content"][3]["type"] == "server_tool_use"  # server tools are not calls to answer
    assert repaired(ANTHROPIC, body) == []  # a sound request is left as it is


def test_responses_and_chat_answer_a_call_left_without_output() -> None:
    body = {"instructions": "I", "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch\n*** Add File: a.c\n+x\n*** End Patch\n"},
        {"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 2\nOutput:\nboom"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "next"}]},
    ]}
    parsed = RESPONSES.parse(body)
    assert parsed.lead == 1 and parsed.items[3]["tool_calls"][1]["args"]["input"].startswith("*** Begin Patch")
    assert parsed.items[4]["is_error"] is True  # a failed command's output is an error
    assert repaired(RESPONSES, body) == [("dangling_call", "c2")]
    assert responses_problems(body) == []
    assert body["input"][6] == {"type": "custom_tool_call_output", "call_id": "c2", "output": ANSWER_TEXT}

    chat = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "go"},
                         {"role": "assistant", "content": None, "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                         {"role": "tool", "tool_call_id": "t9", "content": "orphan"}, {"role": "user", "content": "next"}]}
    assert sorted(repaired(CHAT, chat)) == [("dangling_call", "t1"), ("orphan_result", "t9")]
    assert [m["role"] for m in chat["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert chat["messages"][3] == {"role": "tool", "tool_call_id": "t1", "content": ANSWER_TEXT}


def test_an_answer_read_from_its_stream_is_the_item_the_next_request_repeats() -> None:
    events = [("message_start", {"type": "message_start", "message": {"id": "m1", "model": "claude-x", "content": [],
                                                                       "usage": {"input_tokens": 9, "cache_read_input_tokens": 4, "cache_creation_input_tokens": 2}}}),
              ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
              ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi "}}),
              ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "there"}}),
              ("content_block_stop", {"type": "content_block_stop", "index": 0}),
              ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}}),
              ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"comm"}}),
              ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "and\": \"ls\"}"}}),
              ("content_block_stop", {"type": "content_block_stop", "index": 1}),
              ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 7}}),
              ("message_stop", {"type": "message_stop"})]
    raw = b"".join(b"event: " + e.encode() + b"\r\ndata: " + orjson.dumps(d) + b"\r\n\r\n" for e, d in events)
    reader, sse = ANTHROPIC.reader(), SSEReader()
    for i in range(0, len(raw), 7):  # any chunking
        for name, data in sse.feed(raw[i:i + 7]):
            reader.event(name, data)
    answer = reader.finish()
    assert answer is not None and answer.usage == {"input": 9, "output": 7, "cache_read": 4, "cache_write": 2, "reasoning": 0}
    again = ANTHROPIC.parse({"messages": [{"role": "assistant", "content": [{"type": "text", "text": "Hi there"},
                                                                          {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}]}]})
    assert answer.items == again.items


def test_the_session_key_table() -> None:
    assert conversation_key("anthropic", {"x-claude-code-session-id": "abc-1"}, {}, []) == ("claude", "abc-1")
    meta = {"metadata": {"user_id": orjson.dumps({"device_id": "d", "session_id": "s-2"}).decode()}}
    assert conversation_key("anthropic", {}, meta, []) == ("claude", "s-2")
    assert conversation_key("openai", {"x-grok-conv-id": "g-3"}, {}, []) == ("grok", "g-3")
    assert conversation_key("openai", {"session-id": "c-4"}, {"prompt_cache_key": "p"}, []) == ("codex", "c-4")
    assert conversation_key("openai", {}, {"prompt_cache_key": "p-5"}, []) == ("openai", "p-5")
    agent, sid = conversation_key("openai", {"session-id": "../../etc"}, {}, [])
    assert agent == "codex" and "/" not in sid and ".." not in sid  # never a path out of the root
    a = conversation_key("openai", {}, {}, [{"role": "user", "text": "x"}])
    assert a == conversation_key("openai", {}, {}, [{"role": "user", "text": "x"}]) != conversation_key("openai", {}, {}, [{"role": "user", "text": "y"}])


def test_print_env_and_a_remote_address() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "catty_ctx", "proxy", *args], capture_output=True, text=True, env=proxy_env(), timeout=60)

    assert run("--print-env", "claude").stdout == "export ANTHROPIC_BASE_URL=http://127.0.0.1:8742\n"
    codex = run("--print-env", "codex", "--listen", "127.0.0.1:9001").stdout
    assert 'base_url = "http://127.0.0.1:9001/v1"' in codex and 'wire_api = "responses"' in codex
    refused = run("--listen", "0.0.0.0:0")
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr and len(refused.stderr.splitlines()) == 1
    bad = run("--listen", "127.0.0.1:0", "--summarizer", "bogus")
    assert bad.returncode == 2 and "upstream" in bad.stderr and len(bad.stderr.splitlines()) == 1
