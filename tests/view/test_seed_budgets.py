"""Budgets (docs/context.md "Externalised payloads"): a terminal's output has its own inline cap, in
characters, beside the general byte cap; the full output is a blob."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from support import ROOT, call, cli, jsonl, msg, result, session_event, write_log


def _append(s: Path, *events: dict) -> list[dict]:
    r = cli("append", str(s), input=b"".join(orjson.dumps(e) + b"\n" for e in events))
    assert r.returncode == 0, r.stderr
    return jsonl(r.stdout)


def _shell_output(n: int = 60_000) -> str:
    lines = [f"line {i:05d} of the build log" for i in range(n // 25 + 2)]
    return "\n".join(lines)[:n]


def test_a_60000_character_shell_output_is_capped_at_20000_in_the_view(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "build"), msg("assistant", "ok")])
    out = _shell_output()
    assert len(out) == 60_000 and len(out.encode()) < 64_000
    _append(s, call("b1", "Bash", {"command": "make"}))
    written = _append(s, result("b1", out))[0]  # the call is in the log, the result in a later append
    assert "blob" in written
    items = jsonl(cli("resume", str(s), "--format", "items").stdout)
    shown = next(i for i in items if i.get("call_id") == "b1" and i["role"] == "tool")["output"]
    assert len(shown) <= 20_000 and shown.startswith(out[:5000]) and shown.endswith(out[-5000:])
    # The note names the real session (a command the model can run), and the blob is the whole output.
    command = f"catty-ctx blob {s.resolve()} {written['blob']}"
    assert command in shown and "SESSION" not in shown
    whole = subprocess.run([sys.executable, "-m", "catty_ctx", "blob", str(s.resolve()), written["blob"]], capture_output=True,
                           cwd=ROOT, check=True).stdout
    assert whole == out.encode()


def test_other_tools_keep_the_general_byte_cap(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "read"), msg("assistant", "ok")])
    out = _shell_output(30_000)
    written = _append(s, call("r1", "Read"), result("r1", out), call("b2", "exec_command"), result("b2", out))
    assert "blob" not in written[1]  # 30,000 bytes: under the general 40 KB
    assert "blob" in written[3] and len(written[3]["output"]) <= 20_000  # a shell's, in the same batch


def test_the_shell_cap_comes_from_the_config_file(tmp_path: Path) -> None:
    from support import cli_process

    s = write_log(tmp_path / "s", [session_event(), msg("user", "x"), msg("assistant", "ok"), call("b1", "shell")])
    conf = tmp_path / "config.toml"
    conf.write_text("shell_limit = 5000\n")
    r = cli_process("append", str(s), "--config", str(conf), input=orjson.dumps(result("b1", _shell_output(8_000))) + b"\n")
    assert r.returncode == 0, r.stderr
    ev = jsonl(r.stdout)[0]
    assert "blob" in ev and len(ev["output"]) <= 5000


def _tools(n: int) -> list[dict]:
    return [{"name": f"tool_{i}", "description": "does a thing " * 20, "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}}
            for i in range(n)]


def test_tool_schemas_count_in_the_views_total_and_the_threshold(tmp_path: Path) -> None:
    from catty_ctx.view.fold import tool_schema_tokens

    base = [session_event(window=20_000), msg("user", "hello"), msg("assistant", "hi")]
    plain = write_log(tmp_path / "plain", base)
    tools = _tools(40)
    schema = tool_schema_tokens({"tools": tools})
    assert schema > 3_000
    withtools = write_log(tmp_path / "tools", [*base, {"kind": "state", "facet": "prompt_context", "value": {"tools": tools}}])
    a = orjson.loads(cli("inspect", str(plain), "--json").stdout)["tokens"]
    b = orjson.loads(cli("inspect", str(withtools), "--json").stdout)["tokens"]
    assert b == a + schema
    # The threshold sees them: at 15 % of 20,000 the session with its tools is over, the other not.
    assert orjson.loads(cli("compact", str(plain), "--check", "--json", "--threshold", "15").stdout)["status"] != "over_threshold"
    assert orjson.loads(cli("compact", str(withtools), "--check", "--json", "--threshold", "15").stdout)["status"] == "over_threshold"
    # A usage event measured them already: its context is the total, nothing added.
    used = write_log(tmp_path / "used", [*base, {"kind": "state", "facet": "prompt_context", "value": {"tools": tools}},
                                         {"kind": "usage", "model": "m", "input": 9_000, "output": 10}])
    assert orjson.loads(cli("inspect", str(used), "--json").stdout)["tokens"] == 9_010


def test_the_announcement_budget_is_the_sessions_and_what_did_not_fit_is_said_once() -> None:
    from catty_ctx.view.announce import Announcer

    def skills(names: list[str]) -> dict:
        return {"kind": "state", "facet": "skills", "value": [{"name": n, "description": "a skill that does things " * 8} for n in names]}

    a = Announcer(window=200_000)  # an 8,000-byte budget
    names = [f"skill-{i:02d}" for i in range(40)]
    first = a.feed(skills(names))
    assert first is not None and "more skills not listed" in first["text"] and "list the skills folders" in first["text"]
    # The same 40 again, and one more: the ones left out are not listed again nor counted again,
    # and the whole stays within the one budget.
    second = a.feed(skills([*names, "skill-new"]))
    total = len(first["text"].encode()) + (len(second["text"].encode()) if second else 0)
    assert a.budget == 8_000 and total <= a.budget + 200  # (the one line saying a new skill did not fit)
    assert second is not None and len(second["text"].encode()) < 300 and "(1 more skills not listed" in second["text"]
    assert second is None or "skill-0" not in second["text"]
    assert second is None or "(40 more" not in second["text"]
