"""`catty-ctx mcp`: the recall server, driven by the official MCP client over stdio (a real
subprocess, forked from one that has imported the SDK: tests/support/forked_cli.py): its four tools, search of what a compaction took out of the context, the exact text
by seq with a cursor, the status `inspect` reports, the usage ledger, and a server that stays up
whatever it is asked."""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from support import forked_cli
import orjson
import pytest
from support import FIXTURES, ROOT, call, cli, msg, plain_run_loads, result, session_event, write_log

from catty_ctx.agents.recall import RECALL_SEARCH_TOOL, SHOW_CHARS_MAX, TOOLS

if TYPE_CHECKING:  # the SDK's client is imported where a test speaks to the server: every worker collects this module
    from mcp.client.session import ClientSession

CLAUDE_FIXTURE = FIXTURES / "agents" / "claude-2.1.332" / "tools-resume-compactions"
CLAUDE_ID = "18b212c6-55ba-4028-a00e-3b23502d22b7"
PLANTED_ERROR = "FAIL test_parse: expected 3, got 4"  # what the recorded sessions' compacted spans alone hold
PLANTED = "warning: --legacy-ssl is deprecated, ci/deploy.sh:41 (removed in 5.0)"  # a line in the middle of a long output


@asynccontextmanager
async def recall_server(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """`catty-ctx mcp ARGS` of this checkout, started and spoken to by the official client."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    keep = {k: os.environ[k] for k in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME") if k in os.environ}
    program, *launcher = forked_cli.command(forked_cli.MCP)  # a process forked from one that has imported the SDK
    params = StdioServerParameters(command=program, args=[*launcher, "mcp", *args], cwd=cwd,
                                   env={**keep, "PYTHONPATH": str(ROOT), **(env or {})})
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def ask(session: ClientSession, tool: str, arguments: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """(isError, the answer: its JSON document, or the error's line)."""
    got = await session.call_tool(tool, arguments or {})
    words = got.content[0].text  # type: ignore[union-attr]
    return got.is_error, (words if got.is_error else orjson.loads(words))


def claude_transcript(tmp_path: Path) -> Path:
    """A private copy of the transcript the real Claude Code CLI wrote (two compactions)."""
    dest = tmp_path / f"{CLAUDE_ID}.jsonl"
    shutil.copyfile(next((CLAUDE_FIXTURE / "projects").glob("*/*.jsonl")), dest)
    return dest


def event_at(target: Path, seq: int) -> dict[str, Any]:
    return orjson.loads(cli("inspect", str(target), "--seq", str(seq), check=True).stdout)


def catty_session(tmp_path: Path) -> tuple[Path, str]:
    """A catty session compacted in segments mode over a long build log holding PLANTED, then
    a turn after the compaction that mentions it again (in the context: not recalled)."""
    log = "\n".join(f"[{i:04d}] compiling module_{i}.c" for i in range(1500))
    output = f"{log}\n{PLANTED}\n{log}\nbuild finished"
    folder = write_log(tmp_path / "s", [session_event(), msg("user", "run the build"), call("c1", "Bash", {"command": "make"}),
                                         result("c1", output), msg("assistant", "The build finished."), msg("user", "deploy it"),
                                         msg("assistant", "Deploying.")])
    cli("compact", str(folder), "--force", "--mode", "segments", check=True)
    after = {"v": 1, "seq": 8, "ts": "2026-11-01T00:01:00.000Z", "kind": "message", "id": "late", "role": "user",
             "text": f"is this still true: {PLANTED}"}
    with open(folder / "updates.jsonl", "ab") as f:
        f.write(orjson.dumps(after) + b"\n")
    return folder, output


def test_the_four_tools_are_listed_read_only_and_the_model_sees_them_under_the_installed_name() -> None:
    async def run() -> list[Any]:
        async with recall_server("--session", str(CLAUDE_FIXTURE)) as s:
            return (await s.list_tools()).tools

    tools = anyio.run(run)
    assert [t.name for t in tools] == list(TOOLS)
    for t in tools:
        assert t.input_schema["type"] == "object" and t.annotations is not None and t.annotations.read_only_hint
    assert next(t for t in tools if t.name == "recall_search").input_schema["required"] == ["pattern"]
    assert RECALL_SEARCH_TOOL == "mcp__catty-recall__recall_search"  # what `hook install claude --mcp` registers


def test_recall_finds_the_exact_line_only_the_compacted_span_holds_and_shows_it_in_pages(tmp_path: Path) -> None:
    folder, output = catty_session(tmp_path)
    summary = next(e for e in map(orjson.loads, (folder / "updates.jsonl").read_bytes().splitlines()) if e["kind"] == "compaction")
    assert PLANTED not in summary["summary"]  # the summary dropped it: only the archive has it

    async def run() -> tuple[Any, list[Any], Any]:
        async with recall_server("--session", str(folder)) as s:
            _, found = await ask(s, "recall_search", {"pattern": "legacy-ssl"})
            pages = []
            cursor: dict[str, Any] = {"seq": found["matches"][0]["seq"], "max_chars": 20_000}
            while True:
                error, page = await ask(s, "recall_show", cursor)
                assert not error, page
                pages.append(page)
                if page["next_cursor"] is None:
                    break
                cursor = {"cursor": page["next_cursor"], "max_chars": 20_000}
            _, regex = await ask(s, "recall_search", {"pattern": r"ci/deploy\.sh:\d+", "regex": True, "limit": 1})
            return found, pages, regex

    found, pages, regex = anyio.run(run)
    (match,) = found["matches"]  # the mention after the compaction is in the context: not listed
    assert match["line"] == PLANTED and match["seq"] == 3 and match["role"] == "tool_result Bash" and match["source"] == "log"
    assert match["before"][-1].startswith("[1499]") and match["after"][0].startswith("[0000]")
    assert found["compacted_through_seq"] == 6 and found["compactions"] == 1
    assert event_at(folder, 3)["output"] == output
    assert len(pages) == -(-len(output) // 20_000) > 2
    assert all(len(p["events"]) == 1 and len(p["events"][0]["text"]) <= 20_000 for p in pages)
    assert "".join(p["events"][0]["text"] for p in pages) == output
    assert [p["events"][0].get("truncated", False) for p in pages] == [True] * (len(pages) - 1) + [False]
    assert regex["matches"][0]["seq"] == 3 and regex["more"] is False


def test_recall_in_a_claude_code_transcript_gives_the_pre_compaction_error_and_the_status_inspect_reports(tmp_path: Path) -> None:
    transcript = claude_transcript(tmp_path)

    async def run() -> tuple[Any, ...]:
        async with recall_server("--session", str(transcript)) as s:
            _, found = await ask(s, "recall_search", {"pattern": PLANTED_ERROR})
            seq = next(m["seq"] for m in found["matches"] if m["role"].startswith("tool_result"))
            _, shown = await ask(s, "recall_show", {"seq": seq})
            _, span = await ask(s, "recall_show", {"from_seq": 0, "to_seq": 9_999, "max_chars": SHOW_CHARS_MAX})
            _, status = await ask(s, "context_status")
            _, usage = await ask(s, "session_usage")
            return found, seq, shown, span, status, usage

    found, seq, shown, span, status, usage = anyio.run(run)
    hit = next(m for m in found["matches"] if m["seq"] == seq)
    assert hit["line"] == PLANTED_ERROR and hit["role"] == "tool_result Bash"
    assert event_at(transcript, seq)["output"].rstrip("\n") == PLANTED_ERROR
    assert shown["events"] == [{**shown["events"][0], "seq": seq, "kind": "tool_result", "text": event_at(transcript, seq)["output"]}]
    assert found["session"]["session_id"] == CLAUDE_ID and found["compactions"] == 2
    assert all(m["seq"] <= found["compacted_through_seq"] for m in found["matches"])
    report = orjson.loads(cli("inspect", str(transcript), "--json", check=True).stdout)
    assert [e["seq"] for e in span["events"]] == list(range(report["events"])) and span["next_cursor"] is None
    for key in ("window", "tokens", "percent", "largest", "turns", "items", "tokens_from", "status"):
        assert status[key] == report[key], key
    assert status["threshold_percent"] == report["threshold"]
    assert status["compactions"] == len(report["compactions"]) and status["last_compaction"] == report["compactions"][-1]
    assert status["tokens_to_threshold"] == status["threshold_tokens"] - report["tokens"] > 0
    ledger = orjson.loads(cli("usage", str(transcript), "--json", check=True).stdout)
    assert usage["totals"] == ledger["totals"] and usage["totals"]["calls"] > 0


def test_recall_in_a_codex_rollout_gives_the_error_its_automatic_compaction_dropped(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    shutil.copyfile(next((FIXTURES / "agents" / "codex-0.171.0" / "tools-resume-compactions").rglob("rollout-*.jsonl")), rollout)

    async def run() -> tuple[Any, Any]:
        async with recall_server("--session", str(rollout)) as s:
            _, found = await ask(s, "recall_search", {"pattern": PLANTED_ERROR})
            seq = next(m["seq"] for m in found["matches"] if m["role"].startswith("tool_result"))
            return found, await ask(s, "recall_show", {"seq": seq})

    found, (error, shown) = anyio.run(run)
    hit = next(m for m in found["matches"] if m["role"] == "tool_result exec_command")
    assert hit["line"] == PLANTED_ERROR and found["session"]["agent"] == "codex" and found["compactions"] == 1
    assert not error and shown["events"][0]["text"] == event_at(rollout, hit["seq"])["output"]


def test_bad_arguments_are_errors_and_the_server_answers_after_them(tmp_path: Path) -> None:
    transcript = claude_transcript(tmp_path)
    bad = [
        ("recall_search", {}),
        ("recall_search", {"pattern": ""}),
        ("recall_search", {"pattern": "(", "regex": True}),
        ("recall_search", {"pattern": "x", "limit": 0}),
        ("recall_search", {"pattern": "x", "limit": 10_000}),
        ("recall_search", {"pattern": 7}),
        ("recall_search", {"pattern": "x", "regex": "yes"}),
        ("recall_search", {"pattern": "x", "colour": "red"}),
        ("recall_search", {"pattern": "x" * 5000}),
        ("recall_show", {}),
        ("recall_show", {"seq": "three"}),
        ("recall_show", {"seq": -1}),
        ("recall_show", {"seq": 10_000_000}),
        ("recall_show", {"from_seq": 9, "to_seq": 2}),
        ("recall_show", {"seq": 1, "cursor": "1:0:1"}),
        ("recall_show", {"cursor": "../../etc/passwd"}),
        ("recall_show", {"seq": 1, "max_chars": 10 ** 9}),
        ("context_status", {"now": True}),
    ]

    async def run() -> tuple[list[tuple[bool, Any]], Any, Any]:
        async with recall_server("--session", str(transcript)) as s:
            answers = [await ask(s, tool, args) for tool, args in bad]
            from mcp.shared.exceptions import MCPError

            with pytest.raises(MCPError) as unknown:
                await s.call_tool("recall_everything", {})
            return answers, unknown.value, await ask(s, "recall_show", {"seq": 0})

    answers, unknown, after = anyio.run(run)
    for (tool, args), (error, words) in zip(bad, answers):
        assert error and isinstance(words, str) and "\n" not in words, (tool, args, words)
    beyond = answers[bad.index(("recall_show", {"seq": 10_000_000}))][1]
    assert "no event with seq 10000000" in beyond and "(its seqs run 0.." in beyond
    assert "recall_everything" in unknown.message
    assert after[0] is False and after[1]["events"][0]["seq"] == 0


def test_a_session_that_cannot_be_read_is_an_error_result_and_the_next_call_reads_it_once_it_can(tmp_path: Path) -> None:
    missing = tmp_path / "later.jsonl"
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b'{"type": "user", "message": \n')

    async def run() -> tuple[Any, ...]:
        async with recall_server("--session", str(missing)) as s, recall_server("--session", str(broken)) as b:
            before = await ask(s, "context_status")
            shutil.copyfile(claude_transcript(tmp_path), missing)
            return before, await ask(s, "context_status"), await ask(b, "recall_search", {"pattern": "x"}), await ask(b, "context_status")

    before, after, garbled, garbled_status = anyio.run(run)
    assert before[0] and str(missing) in before[1]
    assert after[0] is False and after[1]["session"]["session_id"] == CLAUDE_ID
    assert garbled[0] and garbled[1].startswith(f"{broken}:1: ") and garbled_status[0]


def test_without_session_the_newest_transcript_of_the_working_folders_project_is_read_at_each_call(tmp_path: Path) -> None:
    project = tmp_path / "work" / "my project"
    project.mkdir(parents=True)
    config = tmp_path / "claude-config"
    folder = config / "projects" / str(project.resolve()).replace("/", "-").replace(" ", "-").replace("_", "-")
    first_id, second_id = CLAUDE_ID, "0f0f0f0f-1111-2222-3333-444444444444"
    original = claude_transcript(tmp_path).read_bytes()

    async def run() -> tuple[Any, ...]:
        async with recall_server(cwd=project, env={"CLAUDE_CONFIG_DIR": str(config)}) as s:
            none = await ask(s, "context_status")
            folder.mkdir(parents=True)
            (folder / f"{first_id}.jsonl").write_bytes(original)
            first = await ask(s, "context_status")
            time.sleep(0.05)  # a later modification time
            (folder / f"{second_id}.jsonl").write_bytes(original.replace(first_id.encode(), second_id.encode()))
            second = await ask(s, "recall_search", {"pattern": PLANTED_ERROR})
            return none, first, second

    none, first, second = anyio.run(run)
    assert none[0] and "no Claude Code transcript" in none[1]
    assert first[1]["session"]["session_id"] == first_id
    assert second[1]["session"]["session_id"] == second_id and second[1]["matches"]


def test_without_session_a_newer_codex_rollout_started_in_the_working_folder_is_read(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    claude_home, codex_home = tmp_path / "claude-config", tmp_path / "codex-home"
    transcript = claude_home / "projects" / str(project.resolve()).replace("/", "-") / f"{CLAUDE_ID}.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copyfile(claude_transcript(tmp_path), transcript)
    recorded = next((FIXTURES / "agents" / "codex-0.171.0" / "tools-resume-compactions").rglob("rollout-*.jsonl"))
    rollout = codex_home / "sessions" / "2026" / "12" / "01" / recorded.name
    elsewhere = codex_home / "sessions" / "2026" / "12" / "02" / "rollout-2026-12-02T00-00-00-99999999-0000-0000-0000-000000000000.jsonl"
    rollout.parent.mkdir(parents=True)
    elsewhere.parent.mkdir(parents=True)
    data = recorded.read_bytes()
    rollout.write_bytes(data.replace(b'"/home/user/project"', orjson.dumps(str(project.resolve()))))
    time.sleep(0.05)
    elsewhere.write_bytes(data.replace(b"01a233b4-5b89-7a30-8fa0-c04352f16042", b"99999999-0000-0000-0000-000000000000"))  # another folder's

    async def run() -> tuple[Any, ...]:
        env = {"CLAUDE_CONFIG_DIR": str(claude_home), "CODEX_HOME": str(codex_home)}
        async with recall_server(cwd=project, env=env) as s:
            return await ask(s, "recall_search", {"pattern": PLANTED_ERROR})

    error, found = anyio.run(run)
    assert not error and found["session"]["agent"] == "codex" and found["session"]["path"] == str(rollout)
    assert any(m["line"] == PLANTED_ERROR for m in found["matches"])


def test_other_commands_and_help_never_load_the_mcp_sdk(tmp_path: Path) -> None:
    for args in (("--help",), ("mcp", "--help"), ("inspect", str(claude_transcript(tmp_path)))):
        status, loaded = plain_run_loads(*args, heavy=("mcp", "mcp_types", "anyio", "pydantic"))
        assert status in (0, None) and loaded == [], (args, loaded)
