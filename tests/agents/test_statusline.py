"""`catty-ctx statusline`: Claude Code's status line from its status JSON and the transcript."""
from __future__ import annotations

import json
import os
import shlex
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from support import both_parsers, cli, plain_run_loads, table_is_the_typer_commands

from catty_ctx.agents.statusline import AUTOCOMPACT_BUFFER, FIELDS, OUTPUT_RESERVE, compact_point, mirror_folder, read_payload, render, status
from catty_ctx.agents.transcript_tally import OPEN_CALLS
from catty_ctx.usage.pipeline import usage

SID = "0a1b2c3d-0000-4000-8000-000000000001"
MODEL = "claude-sonnet-4-5-20250929"


@pytest.fixture(autouse=True)
def _claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(tmp_path / "mirrors"))
    for name in ("DISABLE_AUTO_COMPACT", "DISABLE_COMPACT", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "CLAUDE_CODE_AUTO_COMPACT_WINDOW"):
        monkeypatch.delenv(name, raising=False)


def _stamp(t: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if t is None else t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def call(n: int, inp: int, cache_read: int, cache_write: int, out: int, *, blocks: int = 3, model: str = MODEL, pad: int = 0,
         t: float | None = None) -> list[dict[str, Any]]:
    """One turn as Claude Code writes it: the prompt, the response's block lines (each repeating
    the usage), a tool result of PAD bytes."""
    usage_ = {"input_tokens": inp, "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write,
              "output_tokens": out}
    base = {"isSidechain": False, "sessionId": SID, "cwd": "/home/user/p", "timestamp": _stamp(t)}
    lines = [{**base, "type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": f"prompt {n}"}}]
    lines += [{**base, "type": "assistant", "uuid": f"a{n}.{b}", "requestId": f"req_{n:06d}",
               "message": {"id": f"msg_{n:06d}", "role": "assistant", "model": model, "content": [{"type": "text", "text": "ok"}],
                           "usage": usage_}} for b in range(blocks)]
    lines.append({**base, "type": "user", "uuid": f"r{n}",
                  "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "x" * pad}]}})
    return lines


def boundary(n: int) -> list[dict[str, Any]]:
    return [{"type": "system", "subtype": "compact_boundary", "uuid": f"c{n}", "isSidechain": False, "sessionId": SID,
             "timestamp": _stamp(), "compactMetadata": {"trigger": "auto", "preTokens": 150_000}}]


def write(path: Path, lines: list[dict[str, Any]], mode: str = "w") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode) as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    return path


def transcript(tmp_path: Path, sid: str = SID) -> Path:
    return tmp_path / "claude" / "projects" / "-home-user-p" / f"{sid}.jsonl"


def payload(path: Path | None, **more: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"session_id": SID, "cwd": "/home/user/p", "model": {"id": MODEL, "display_name": "Sonnet 4.5"},
                           "context_window": {"context_window_size": 200_000}}
    if path is not None:
        doc["transcript_path"] = str(path)
    doc.update(more)
    return doc


def kept_state() -> dict[str, Any]:
    """The one transcript's state the status line keeps (not the day's cost beside it)."""
    folder = Path(os.environ["XDG_CACHE_HOME"]) / "catty-ctx" / "statusline"
    (state,) = [p for p in folder.glob("*.json") if not p.name.startswith("today-")]
    return json.loads(state.read_text())


def run_line(doc: Any, *args: str) -> tuple[int, str, str]:
    proc = cli("statusline", *args, input=doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def fields(doc: Any) -> dict[str, Any]:
    code, out, _err = run_line(doc, "--json")
    assert code == 0 and out.count("\n") == 1
    return json.loads(out)


def test_percent_is_the_last_requests_context_over_the_window(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 900, 10_000, 2_000, 50) + call(2, 120, 61_000, 3_500, 400))
    got = fields(payload(path))
    ctx = 120 + 61_000 + 3_500
    point = 200_000 - OUTPUT_RESERVE - AUTOCOMPACT_BUFFER
    assert got["tokens"] == ctx and got["window"] == 200_000 and got["source"] == "transcript"
    assert got["percent"] == round(ctx * 100 / 200_000, 2) == 32.31
    assert got["compact_at"] == point and got["compact_percent"] == round(ctx * 100 / point, 2)
    assert got["cached_percent"] == round(61_000 * 100 / ctx, 2)
    code, line, err = run_line(payload(path))
    assert code == 0 and err == "" and line.count("\n") == 1
    assert "Sonnet 4.5" in line and "ctx 64.6k/200k 32% (39% of auto-compact)" in line and "cached 94%" in line
    # a window of 1M (the JSON's): the same context is a smaller share
    assert fields(payload(path, context_window={"context_window_size": 1_000_000}))["percent"] == round(ctx * 100 / 1_000_000, 2)


def test_session_cost_counts_each_call_once_as_the_usage_ledger_does(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 900, 10_000, 2_000, 50) + call(2, 120, 61_000, 3_500, 400, blocks=1)
                 + call(3, 10, 70_000, 0, 1_000, blocks=4))
    ledger, _scan = usage([path])
    expected = ledger.totals["cost_usd"]
    assert expected and ledger.totals["calls"] == 3
    got = fields(payload(path, cost={"total_cost_usd": 99.0}))
    assert got["session_cost"] == pytest.approx(expected, abs=1e-6)
    # and after more calls are appended (one a copy of a call already counted)
    write(path, call(4, 5, 80_000, 100, 10) + call(3, 10, 70_000, 0, 1_000, blocks=1), "a")
    ledger, _scan = usage([path])
    assert ledger.totals["calls"] == 4
    assert fields(payload(path))["session_cost"] == pytest.approx(ledger.totals["cost_usd"], abs=1e-6)


def test_a_late_copy_of_an_early_call_is_still_counted_once(tmp_path: Path) -> None:
    path = transcript(tmp_path)
    write(path, [line for n in range(OPEN_CALLS + 20) for line in call(n, n, 1_000 + n, 10, 5)])
    fields(payload(path))
    for n in range(OPEN_CALLS + 20, OPEN_CALLS + 40):  # run by run, as Claude Code appends
        write(path, call(n, n, 1_000 + n, 10, 5), "a")
        fields(payload(path))
    write(path, call(0, 0, 1_000, 10, 5, blocks=1) + call(OPEN_CALLS + 30, 1, 1, 1, 1, blocks=1), "a")  # copies
    got = fields(payload(path))
    ledger, _scan = usage([path])
    assert ledger.totals["calls"] == OPEN_CALLS + 40
    assert got["session_cost"] == pytest.approx(ledger.totals["cost_usd"], abs=1e-6)
    state = kept_state()
    assert state["calls"] == OPEN_CALLS + 40 and state["sealed_calls"] == 40


def test_the_subagents_calls_are_the_sessions_too_counted_once(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 900, 10_000, 2_000, 50) + call(2, 120, 61_000, 3_500, 400))
    side = [{**line, "isSidechain": True, "agentId": "ab12"} for line in call(10, 5, 9_000, 100, 70) + call(11, 6, 9_500, 0, 80)]
    replay = {**call(2, 120, 61_000 + 50_000, 3_500, 400, blocks=1)[1], "isSidechain": True, "agentId": "ab12", "requestId": "req_other",
              "uuid": "side-replay"}
    write(path.with_suffix("") / "subagents" / "agent-ab12.jsonl", [*side, replay])  # a side question re-logs a parent response
    write(path.with_suffix("") / "subagents" / "workflows" / "wf_1" / "agent-cd34.jsonl",
          [{**line, "isSidechain": True, "agentId": "cd34"} for line in call(20, 7, 1_000, 0, 9)])
    ledger, _scan = usage([path.parent.parent], by="session")
    (row,) = ledger.rows
    assert row["calls"] == 5
    got = fields(payload(path))
    assert got["session_cost"] == pytest.approx(row["cost_usd"], abs=1e-6)
    assert got["tokens"] == 120 + 61_000 + 3_500  # the main conversation's last request, not a subagent's
    write(path.with_suffix("") / "subagents" / "agent-ab12.jsonl", [{**line, "isSidechain": True, "agentId": "ab12"}
                                                                      for line in call(12, 1, 2_000, 0, 3)], "a")
    ledger, _scan = usage([path.parent.parent], by="session")
    assert fields(payload(path))["session_cost"] == pytest.approx(ledger.rows[0]["cost_usd"], abs=1e-6)


def test_only_the_appended_bytes_are_read(tmp_path: Path) -> None:
    # Calls between two large tool results: the middle lies outside the fingerprinted start and end.
    path = write(transcript(tmp_path), call(1, 1, 1_000, 0, 1, pad=100_000) + call(2, 2, 22_222, 0, 2, pad=100_000)
                 + call(3, 3, 3_000, 0, 3, pad=100_000))
    assert fields(payload(path))["tokens"] == 3 + 3_000
    data = path.read_bytes()
    middle = data.index(b'"cache_read_input_tokens": 22222')
    assert 70_000 < middle < len(data) - 70_000
    # Changed in place, same length: a run that read the prefix again would count 99999 (and 99999 tokens of cost).
    path.write_bytes(data.replace(b'"cache_read_input_tokens": 22222', b'"cache_read_input_tokens": 99999'))
    before = fields(payload(path))["session_cost"]
    write(path, call(4, 4, 44_000, 0, 4), "a")
    got = fields(payload(path))
    assert got["tokens"] == 4 + 44_000
    state = kept_state()
    assert state["offset"] == path.stat().st_size and state["calls"] == 4
    ledger, _scan = usage([path])
    assert got["session_cost"] != pytest.approx(ledger.totals["cost_usd"], abs=1e-6)  # the edited middle was not read again
    assert got["session_cost"] > before


def test_a_run_cancelled_between_its_two_writes_leaves_a_usable_state(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 900, 10_000, 2_000, 50) + call(2, 120, 61_000, 3_500, 400))
    fields(payload(path))
    folder = Path(os.environ["XDG_CACHE_HOME"]) / "catty-ctx" / "statusline"
    before = {p.name: p.read_bytes() for p in folder.iterdir() if not p.name.startswith("today-")}
    assert sorted(n.rsplit(".", 1)[1] for n in before) == ["calls", "json"]
    write(path, call(3, 10, 70_000, 0, 1_000), "a")
    fields(payload(path))  # then, as if Claude Code had cancelled it after its calls file, before its state:
    for name, data in before.items():
        (folder / name).write_bytes(data)
    write(path, call(4, 5, 80_000, 100, 10), "a")
    got = fields(payload(path))
    ledger, _scan = usage([path])
    assert ledger.totals["calls"] == 4 and got["session_cost"] == pytest.approx(ledger.totals["cost_usd"], abs=1e-6)
    assert len([p for p in folder.iterdir() if p.name.endswith(".calls")]) == 1


def test_a_rewritten_or_truncated_transcript_is_read_again(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 1, 10_000, 0, 1) + boundary(1) + call(2, 2, 20_000, 0, 2) + boundary(2)
                 + call(3, 3, 30_000, 0, 3))
    got = fields(payload(path))
    assert got["compactions"] == 2 and got["tokens"] == 30_003
    write(path, call(1, 1, 10_000, 0, 1))  # cut back to its first lines
    got = fields(payload(path))
    assert got["compactions"] == 0 and got["tokens"] == 10_001
    ledger, _scan = usage([path])
    assert got["session_cost"] == pytest.approx(ledger.totals["cost_usd"], abs=1e-6)
    # rewritten in place, the same size: the last line's usage changed
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"cache_read_input_tokens": 10000', b'"cache_read_input_tokens": 10009'))
    assert fields(payload(path))["tokens"] == 10_010
    # replaced by another file (a new inode) that is longer
    other = write(tmp_path / "other.jsonl", call(1, 1, 10_000, 0, 1) + call(2, 7, 70_000, 0, 7))
    os.replace(other, path)
    assert fields(payload(path))["tokens"] == 70_007


def test_a_compaction_resets_the_context_until_the_next_request(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 1, 150_000, 0, 1) + boundary(1))
    got = fields(payload(path, context_window={"context_window_size": 200_000, "current_usage": None}))
    assert got["compactions"] == 1 and got["tokens"] is None and got["percent"] is None
    write(path, call(2, 10, 9_000, 1_000, 5), "a")
    got = fields(payload(path))
    assert got["compactions"] == 1 and got["tokens"] == 10_010


def test_missing_transcript_falls_back_to_the_jsons_fields(tmp_path: Path) -> None:
    doc = payload(tmp_path / "gone.jsonl", cost={"total_cost_usd": 1.25},
                  context_window={"context_window_size": 200_000, "total_input_tokens": 50_000,
                                  "current_usage": {"input_tokens": 1_000, "output_tokens": 30, "cache_creation_input_tokens": 9_000,
                                                    "cache_read_input_tokens": 40_000}})
    got = fields(doc)
    assert got["source"] == "status" and got["tokens"] == 50_000 and got["percent"] == 25.0
    assert got["session_cost"] == 1.25 and got["compactions"] is None and got["cached_percent"] == 80.0
    unreadable = write(transcript(tmp_path), call(1, 1, 10_000, 0, 1))
    unreadable.chmod(0)
    try:
        if not os.access(unreadable, os.R_OK):  # (root reads it anyway)
            assert fields({**doc, "transcript_path": str(unreadable)})["source"] == "status"
    finally:
        unreadable.chmod(0o644)
    code, line, _err = run_line(doc)
    assert code == 0 and "ctx 50k/200k 25%" in line and "$1.25 session" in line


@pytest.mark.parametrize("stdin", [b"", b"not json at all", b"[1, 2]", b"\xff\xfe\x00garbage", b'{"model": ', b"[" * 100_000,
                                   b'"a string"'])
def test_garbage_on_stdin_exits_0_with_one_short_line(stdin: bytes) -> None:
    code, out, err = run_line(stdin)
    assert code == 0 and out.startswith("catty-ctx: no status (") and out.count("\n") == 1 and len(out) < 80 and err == ""
    code, out, err = run_line(stdin, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["problem"] and set(FIELDS) <= set(doc) and doc["tokens"] is None


def test_odd_fields_and_a_garbage_transcript_still_give_a_line(tmp_path: Path) -> None:
    path = transcript(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'garbage\n{"type": "assistant", "message": {"usage": "no"}}\n[1]\n\x00\xff\n{"message": 3}\n{"type": "assistant"')
    for doc in (payload(path), {"session_id": 5, "model": "x", "context_window": [], "cost": "free", "transcript_path": 7},
                {"session_id": "../../etc", "transcript_path": str(tmp_path)}, {}):
        code, line, _err = run_line(doc)
        assert code == 0 and line.count("\n") == 1 and not line.startswith("catty-ctx: no status")


def test_text_from_the_session_cannot_drive_the_terminal(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 1, 1_000, 0, 1, model="evil\x1b]0;pwned\x07\nmodel\u202e"))
    for doc in (payload(path, model={"display_name": "Opus\x1b[2J\r\nrm -rf"}), payload(path, model={})):
        code, line, _err = run_line(doc)
        assert code == 0 and line.count("\n") == 1
        assert "\x1b" not in line and "\r" not in line and "\u202e" not in line and "\x07" not in line


def test_format_names_the_fields_and_json_holds_them_all(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 100, 50_000, 0, 10) + boundary(1) + call(2, 100, 99_900, 0, 10))
    mirror = tmp_path / "mirrors" / "claude" / SID / "segments"
    mirror.mkdir(parents=True)
    for name in ("segment_000.md", "segment_001.md", "index.json", "INDEX.md"):
        (mirror / name).write_text("x")
    code, line, _err = run_line(payload(path), "--format", "{model_id}|{percent}|{compactions}|{segments}|{{x}}|{tokens}")
    assert code == 0 and line == f"{MODEL}|50%|1|2|{{x}}|100k\n"
    got = fields(payload(path))
    assert set(got) == {*FIELDS, "problem"} and got["segments"] == 2 and got["session_id"] == SID
    for bad in ("{nope}", "{model", "a } b"):
        code, out, err = run_line(payload(path), "--format", bad)
        assert code == 2 and out == "" and err.count("\n") == 1 and "--format" in err
    assert render(dict.fromkeys(FIELDS)) .count("?") >= 10


def test_todays_cost_is_the_ledgers_for_today_counted_once(tmp_path: Path) -> None:
    yesterday = time.time() - 86_400 * 2
    path = write(transcript(tmp_path), call(1, 100, 50_000, 0, 10, t=yesterday) + call(2, 100, 70_000, 0, 10))
    other = write(transcript(tmp_path, "0a1b2c3d-0000-4000-8000-000000000002"), call(7, 5, 20_000, 10, 99))
    write(other.with_name("0a1b2c3d-0000-4000-8000-000000000003.jsonl"), call(7, 5, 20_000, 10, 99))  # a copy of the same call
    day = time.strftime("%Y-%m-%d")
    ledger, _scan = usage([transcript(tmp_path).parent.parent], since=day, until=day)
    assert ledger.totals["calls"] == 2
    # The first run starts the ledger in a process of its own and shows no figure yet (a new day).
    assert fields(payload(path))["today_cost"] is None
    kept = next((Path(os.environ["XDG_CACHE_HOME"]) / "catty-ctx" / "statusline").glob("today-*.json"))
    deadline = time.monotonic() + 90
    while json.loads(kept.read_text())["cost"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
    got = fields(payload(path))
    assert got["today_cost"] == pytest.approx(ledger.totals["cost_usd"], abs=1e-6) and 0 < got["today_cost"] < got["session_cost"] + 1
    # asked in this process, as a library caller does
    assert status(payload(path), folder=str(tmp_path / "other-state"))["today_cost"] == pytest.approx(got["today_cost"], abs=1e-9)


@pytest.mark.parametrize("env", [{}, {"XDG_DATA_HOME": "/data"}, {"CATTY_CTX_MIRRORS": "/m"}])
@pytest.mark.parametrize("sid", [SID, "a.b_c-d", "../x", ".", "x/y", "", "-a"])
def test_the_mirror_folder_is_the_hooks_own(sid: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from catty_ctx.agents.hooks import HookFailure, mirror_dir, mirrors_root, session_id_of

    for name in ("XDG_DATA_HOME", "CATTY_CTX_MIRRORS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        theirs: str | None = str(mirror_dir(mirrors_root(None), "claude", session_id_of({"session_id": sid})))
    except HookFailure:
        theirs = None
    assert mirror_folder(sid or None) == theirs
    if theirs is not None:
        assert mirror_folder(sid, "/given") == str(mirror_dir(mirrors_root("/given"), "claude", sid))


def test_compaction_point_follows_claude_codes_settings() -> None:
    assert compact_point(200_000, {}) == 167_000
    assert compact_point(1_000_000, {}) == 967_000
    assert compact_point(200_000, {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}) == 90_000
    assert compact_point(200_000, {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "99"}) == 167_000
    assert compact_point(1_000_000, {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "300000"}) == 267_000
    assert compact_point(200_000, {"DISABLE_AUTO_COMPACT": "1"}) is None
    assert read_payload(b"  ") == ({}, "stdin is empty")


def test_status_without_a_transcript_needs_no_files(tmp_path: Path) -> None:
    got = status({"model": {"id": "claude-opus-4-1[1m]"}}, folder=str(tmp_path / "state"))
    assert got["window"] == 1_000_000 and got["tokens"] is None and got["source"] == "none"


def test_installed_statusline_command_runs_this_command(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    cli("hook", "install", "claude", "--settings", str(settings), "--statusline", "--command", "catty-ctx", check=True)
    entry = json.loads(settings.read_text())["statusLine"]
    words = shlex.split(entry["command"])
    assert entry["type"] == "command" and words[0] == "catty-ctx"
    path = write(transcript(tmp_path), call(1, 10, 20_000, 0, 5))
    proc = cli(*words[1:], input=json.dumps(payload(path)).encode())
    assert proc.returncode == 0 and b"ctx 20k/200k 10%" in proc.stdout
    cli("hook", "uninstall", "claude", "--settings", str(settings), check=True)
    assert json.loads(settings.read_text()) == {"model": "opus"}


def test_statusline_starts_without_typer_and_both_parsers_agree(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 10, 20_000, 0, 5))
    doc = json.dumps(payload(path)).encode()
    status_code, loaded = plain_run_loads("statusline", input=doc)
    assert status_code in (0, None) and loaded == []
    status_code, loaded = plain_run_loads("statusline", "--json", input=b"garbage")
    assert status_code in (0, None) and loaded == []
    both_parsers("statusline", "--format", "{tokens} {percent}", input=doc)
    both_parsers("statusline", "--format", "{bad}", input=doc)
    table_is_the_typer_commands("statusline")


def test_the_rate_limits_claude_code_sends_show_as_both_percentages(tmp_path: Path) -> None:
    path = write(transcript(tmp_path), call(1, 100, 50_000, 0, 10))
    resets = time.time() + 3600
    doc = payload(path, rate_limits={"five_hour": {"used_percentage": 23.5, "resets_at": resets},
                                     "seven_day": {"used_percentage": 41.2, "resets_at": resets + 86_400 * 3}})
    got = fields(doc)
    assert (got["five_hour_percent"], got["seven_day_percent"], got["five_hour_resets"]) == (23.5, 41.2, resets)
    code, line, _err = run_line(doc)
    assert code == 0 and " · 5h 24% · 7d 41% · " in line
    code, line, _err = run_line(doc, "--format", "{five_hour_percent} until {five_hour_resets} | {seven_day_percent} | {limits}")
    assert line == f"24% until {time.strftime('%H:%M', time.localtime(resets))} | 41% | 5h 24% · 7d 41%\n"
    # a field of the wrong kind is unknown, not a failure
    odd = fields(payload(path, rate_limits={"five_hour": {"used_percentage": "23"}, "seven_day": []}))
    assert odd["five_hour_percent"] is None and odd["problem"] is None


def test_without_rate_limits_the_line_shows_the_running_blocks_cost_and_burn_rate(tmp_path: Path) -> None:
    now = time.time()
    path = write(transcript(tmp_path), call(1, 100, 50_000, 2_000, 400, t=now - 1800) + call(2, 300, 90_000, 0, 900, t=now - 60))
    write(transcript(tmp_path, "0a1b2c3d-0000-4000-8000-000000000002"), call(7, 5, 20_000, 10, 99, t=now - 1200))  # another session
    ledger, _scan = usage([transcript(tmp_path).parent.parent], by="block", use_cache=False)
    running = ledger.rows[-1]
    assert running["active"] and running["calls"] == 3
    got = status(payload(path), folder=str(tmp_path / "state"))  # the ledger asked in this process
    assert got["block_cost"] == pytest.approx(running["cost_usd"]) and got["block_burn"] == pytest.approx(running["cost_per_hour"])
    assert got["five_hour_percent"] is None and got["limits"] == f"block ${running['cost_usd']:.2f} at ${running['cost_per_hour']:.2f}/h"
    assert f" · {got['limits']} · " in render(got)
    # nothing known: the field is `?`
    assert render(dict.fromkeys(FIELDS), "{limits}|{block_burn}") == "?|?"
