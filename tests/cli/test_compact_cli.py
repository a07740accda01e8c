"""`catty-ctx compact`: the command line over the compaction pipeline."""
from __future__ import annotations

import os
import sys
import shutil
from pathlib import Path

import orjson

from support import both_parsers, cli, cli_on_a_terminal, fixture_session, jsonl, msg, plain_run_loads, session_event, table_is_the_typer_commands, write_log
from support.scripted_server import ScriptedServer, error, sse


def _session(path: Path, window: int = 200_000) -> Path:
    return write_log(path, [
        session_event(window=window),
        msg("system", "sys"),
        msg("user", "Make the build green; do not edit vendor/.", "u1"),
        msg("assistant", "Working on it.", "a1"),
    ])


def test_force_compacts_and_prints_the_result_as_json(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    out = orjson.loads(cli("compact", str(s), "--force", "--json", check=True).stdout)
    assert out["status"] == "compacted" and out["summarizer"] == "extractive" and out["through_seq"] == 3
    ev = jsonl((s / "updates.jsonl").read_bytes())[-1]
    assert ev["kind"] == "compaction" and ev["id"] == out["id"] and (s / out["artifact"]).is_file()


def test_below_threshold_exits_0_and_writes_nothing(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    before = (s / "updates.jsonl").read_bytes()
    proc = cli("compact", str(s), check=True)
    assert jsonl(proc.stdout)[0]["status"] == "below_threshold" and (s / "updates.jsonl").read_bytes() == before


def test_check_exits_1_when_over_and_0_when_under(tmp_path: Path) -> None:
    s = _session(tmp_path / "root" / "s", window=40)
    assert cli("compact", str(s), "--check").returncode == 1
    assert cli("compact", str(tmp_path / "root"), "--check").returncode == 1
    proc = cli("compact", str(_session(tmp_path / "big-window")), "--check")
    assert proc.returncode == 0 and jsonl(proc.stdout)[0]["status"] == "below_threshold"
    assert cli("compact", "-", "--check", input=(s / "updates.jsonl").read_bytes()).returncode == 1


def test_root_compacts_sessions_over_their_threshold(tmp_path: Path) -> None:
    _session(tmp_path / "root" / "over", window=2000)  # room for the summary that replaces it
    _session(tmp_path / "root" / "under")
    out = orjson.loads(cli("compact", str(tmp_path / "root"), "--threshold", "1", "--json", check=True).stdout)
    assert {Path(r["path"]).name: r["status"] for r in out["sessions"]} == {"over": "compacted", "under": "below_threshold"}


def test_compact_refuses_stdin_with_exit_2(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    proc = cli("compact", "-", "--force", input=(s / "updates.jsonl").read_bytes())
    assert proc.returncode == 2 and b"needs a session directory" in proc.stderr


def test_bad_options_are_usage_errors(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    for args in (["--summarizer", "magic"], ["--mode", "poem"]):
        proc = cli("compact", str(s), "--force", *args)
        assert proc.returncode == 2 and proc.stderr.startswith(b"catty-ctx: error:"), args


def test_bad_log_line_is_exit_65_naming_file_and_line(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    with open(s / "updates.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":4}\n')
    proc = cli("compact", str(s), "--force")
    assert proc.returncode == 65 and b"updates.jsonl:5:" in proc.stderr and b"Traceback" not in proc.stderr


def test_openai_summarizer_over_a_real_http_endpoint(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    summary = "<summary>" + "The user wants a green build; vendor/ is off limits. " * 12 + "</summary>"
    with ScriptedServer([error(502, "bad gateway"), sse(summary)]) as srv:
        env = {"OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "k", "CATTY_CTX_RETRY_BACKOFF": "0"}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            out = orjson.loads(cli("compact", str(s), "--force", "--summarizer", "openai:m1", "--json", check=True).stdout)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    doc = orjson.loads((s / out["artifact"]).read_bytes())
    assert [a["outcome"] for a in doc["attempts"]] == ["transient", "success"] and doc["summarizer"] == "openai:m1"
    assert "vendor/ is off limits" in jsonl((s / "updates.jsonl").read_bytes())[-1]["summary"]


def test_summariser_failure_exits_with_one_line_and_no_event(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    before = (s / "updates.jsonl").read_bytes()
    script = tmp_path / "bad.py"
    script.write_text("import sys\nsys.stdin.read()\nsys.exit(4)\n")
    proc = cli("compact", str(s), "--force", "--summarizer", f"cmd:{sys.executable} {script}")
    assert proc.returncode == 65 and proc.stderr.count(b"\n") == 1 and b"exited 4" in proc.stderr
    assert (s / "updates.jsonl").read_bytes() == before


def test_replay_prints_the_summary_and_timings_and_touches_nothing(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    out = orjson.loads(cli("compact", str(s), "--force", "--json", check=True).stdout)
    before = sorted((p.name, p.stat().st_size) for p in s.rglob("*"))
    script = tmp_path / "echo.py"
    script.write_text("import sys\nsys.stdin.read()\nprint('<summary>' + 'replayed ' * 80 + '</summary>')\n")
    proc = cli("compact", "--replay", str(s / out["artifact"]), "--summarizer", f"cmd:{sys.executable} {script}", "--json", check=True)
    rep = orjson.loads(proc.stdout)
    assert rep["summary"].startswith("replayed") and rep["original_summarizer"] == "extractive" and "total_ms" in rep["timings"]
    assert sorted((p.name, p.stat().st_size) for p in s.rglob("*")) == before


def test_help_has_a_description_and_an_example() -> None:
    out = cli("compact", "--help", check=True).stdout.decode()
    assert "Compact a session" in out and "Example" in out and "--replay" in out


def test_prefire_then_two_pass_on_the_command_line(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    pre = orjson.loads(cli("compact", str(s), "--prefire", "--json", check=True).stdout)
    assert pre["status"] == "prefired" and pre["prefix_len"] > 0 and (s / "compaction_requests" / "prefire.json").is_file()
    assert jsonl((s / "updates.jsonl").read_bytes())[-1]["kind"] != "compaction"
    cli("append", str(s), "-q", input=b'{"kind":"message","id":"n","role":"user","text":"next"}\n', check=True)
    out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--json", check=True).stdout)
    assert out["two_pass"]["hit"] is True and jsonl((s / "updates.jsonl").read_bytes())[-1]["two_pass"]["hit"] is True


def test_segments_mode_on_the_command_line(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    out = orjson.loads(cli("compact", str(s), "--force", "--mode", "segments", "--detail", "minimal", "--json", check=True).stdout)
    assert out["segment"] == "segment_000.md"
    listed = orjson.loads(cli("segment", "list", str(s), "--json", check=True).stdout)["segments"]
    assert [(r["segment"], r["file"], r["detail"]) for r in listed] == [(0, "segment_000.md", "minimal")]
    assert cli("compact", str(s), "--force", "--mode", "segments", "--detail", "loud").returncode == 2


def test_no_redact_on_the_command_line(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "token: ghp_" + "x" * 36, "u1")])
    out = orjson.loads(cli("compact", str(s), "--force", "--json", check=True).stdout)
    assert b"ghp_" not in (s / out["artifact"]).read_bytes()
    cli("append", str(s), "-q", input=b'{"kind":"message","id":"n","role":"user","text":"next"}\n', check=True)
    out = orjson.loads(cli("compact", str(s), "--force", "--no-redact", "--json", check=True).stdout)
    assert b"ghp_" + b"x" * 36 in (s / out["artifact"]).read_bytes()


def test_a_root_shows_a_bar_on_a_terminal_and_none_in_a_pipe(tmp_path: Path) -> None:
    for i in range(30):
        _session(tmp_path / "root" / f"s{i:02d}")
    code, out, err = cli_on_a_terminal("compact", str(tmp_path / "root"), "--check", "--json")
    assert code == 0 and b"sessions" in err and b"30" in err
    assert len(orjson.loads(out)["sessions"]) == 30
    piped = cli("compact", str(tmp_path / "root"), "--check", "--json")
    assert piped.returncode == 0 and piped.stderr == b""


def test_planted_state_is_in_resume_after_1_and_after_5_compactions(tmp_path: Path) -> None:
    """Todos in progress, edited files, a running job and subagent, the instructions and a
    user constraint: all in `resume`'s output, round after round."""
    from compact.test_compact import _assert_state_survives, planted

    s = planted(tmp_path / "s")
    for r in range(1, 6):
        cli("compact", str(s), "--force", check=True)
        items = jsonl(cli("resume", str(s), "--format", "items", check=True).stdout)
        if r in (1, 5):
            _assert_state_survives(items)
        line = orjson.dumps({"kind": "message", "id": f"r{r}", "role": "user", "text": f"round {r}"}) + b"\n"
        cli("append", str(s), "-q", input=line, check=True)


def test_a_fork_of_a_segmented_session_reads_its_own_segments(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    cli("compact", str(s), "--force", "--mode", "segments", check=True)
    cli("fork", str(s), str(tmp_path / "child"), check=True)
    (s / "segments" / "segment_000.md").write_text("the parent's copy changed\n")
    child = tmp_path / "child"
    assert orjson.loads(cli("segment", "list", str(child), "--json", check=True).stdout)["segments"][0]["file"] == "segment_000.md"
    hits = jsonl(cli("segment", "grep", str(child), "vendor/", check=True).stdout)
    assert hits and all(h["segment"] == 0 for h in hits)
    assert b"vendor/" in cli("segment", "show", str(child), "0", check=True).stdout


# -- the typer-free start (cli/fastpath.py) ------------------------------------------------------

def test_compacts_option_table_is_the_typer_commands() -> None:
    command = table_is_the_typer_commands("compact")
    assert {p.name: p.type.max for p in command.params if getattr(p.type, "max", None) is not None} == {"threshold": 100}
    target = command.params[0]
    assert target.param_type_name == "argument" and target.name == "target" and not target.required


def test_compacts_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.compact import parse_args

    assert parse_args(["S", "--check", "--json", "--threshold", "100"]) == {"target": "S", "check": True, "as_json": True, "threshold": 100.0}
    assert parse_args(["--force", "S", "--mode=segments", "--detail", "minimal", "--min-summary-chars", "0", "--timeout", "0.1"]) == {
        "target": "S", "force": True, "mode": "segments", "detail": "minimal", "min_summary_chars": 0, "timeout": 0.1}
    assert parse_args(["--replay", "A.json", "--summarizer", "cmd:./m.sh"]) == {"replay": "A.json", "summarizer": "cmd:./m.sh"}
    assert parse_args([]) == {}  # (run says what is missing, as under typer)
    for typer_says in (["--help"], ["S", "-h"], ["S", "T"], ["S", "--threshold", "101"], ["S", "--threshold", "-1"], ["S", "--threshold", "nan"],
                       ["S", "--timeout", "0.05"], ["S", "--min-summary-chars", "-1"], ["S", "--prefire-wait", "x"], ["S", "--threshold"],
                       ["S", "--force=1"], ["S", "--bogus"], ["S", "--connect-timeout", "0"]):
        assert parse_args(typer_says) is None, typer_says


def test_compacts_two_parsers_give_the_same_output_and_exit(demo: Path, tmp_path: Path) -> None:
    torn = fixture_session("torn", tmp_path)
    bad = _session(tmp_path / "bad")
    with open(bad / "updates.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":"x"}\n')
    _session(tmp_path / "root" / "a")
    _session(tmp_path / "root" / "b", window=40)
    cases: list[tuple[list[str], bytes | None]] = [
        ([str(demo), "--check"], None), ([str(demo), "--check", "--threshold", "1"], None), ([str(demo), "--check", "--json", "--threshold=100"], None),
        ([str(torn), "--check", "--json"], None), ([str(bad), "--check"], None), ([str(tmp_path / "missing"), "--check"], None),
        ([str(demo), "--detail", "balanced"], None), ([str(demo), "--force", "--mode", "poem"], None), ([], None),
        (["--replay", "A.json", str(demo)], None), (["-", "--check", "--threshold", "1"], (demo / "updates.jsonl").read_bytes()),
        ([str(tmp_path / "root"), "--check", "--json"], None),
    ]
    for args, stdin in cases:
        both_parsers("compact", *args, input=stdin)
    assert not (demo / "compaction_requests").exists()  # none of them compacted


def test_a_plain_compact_never_loads_typer_or_rich(demo: Path, tmp_path: Path) -> None:
    for args, status in (([str(demo), "--check"], 0), ([str(demo), "--check", "--json", "--threshold", "1"], 1),
                         ([str(demo), "--force", "--json"], 0), ([str(tmp_path / "missing")], 2)):
        assert plain_run_loads("compact", *args) == (status, []), args
    assert jsonl((demo / "updates.jsonl").read_bytes())[-1]["kind"] == "compaction"  # the plain --force did compact


def test_a_compaction_that_grows_the_view_says_so(tmp_path: Path) -> None:
    from support import msg, session_event, write_log

    usage = {"kind": "usage", "model": "m", "input": 100, "output": 20, "cache_read": 0, "cache_write": 0, "reasoning": 0}
    small = write_log(tmp_path / "small", [session_event("small-1"), msg("user", "hi", "u1"), msg("assistant", "hello", "a1"), usage])
    proc = cli("compact", str(small), "--force")
    row = jsonl(proc.stdout)[0]
    assert proc.returncode == 0 and row["status"] == "compacted" and row["tokens_after"] > row["tokens_before"]
    assert b"the view grew" in proc.stderr


def test_a_compaction_that_shrinks_the_view_does_not_warn(tmp_path: Path) -> None:
    from support import FIXTURES

    s = tmp_path / "demo"
    shutil.copytree(FIXTURES / "sessions" / "demo", s)
    proc = cli("compact", str(s), "--force")
    assert proc.returncode == 0 and b"the view grew" not in proc.stderr
