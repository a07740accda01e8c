"""Summarisers: one interface; retries, the degenerate rule and the input-overflow ladder
against a real HTTP server on 127.0.0.1; cmd: with real subprocesses."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from catty_ctx.compact.ladder import StreamTimer, SummaryRequest, extract_summary, fit_items, lossy_items
from catty_ctx.compact.summarizers import CmdSummarizer, OpenAISummarizer, get_summarizer
from catty_ctx.errors import UsageError
from catty_ctx.view.tokens import item_tokens
from support.scripted_server import ScriptedServer, error, plain, sse

GOOD = "<summary>\n" + "## 1. Primary Request and Intent\nFix the parser. " * 20 + "\n</summary>"


def _items(n: int = 6, size: int = 400) -> list[dict]:
    items: list[dict] = [{"seq": 1, "role": "system", "text": "sys"}]
    for i in range(n):
        items.append({"seq": 10 * i + 2, "role": "user", "text": f"request {i} " + "u" * size})
        items.append({"seq": 10 * i + 3, "role": "assistant", "text": f"step {i}", "tool_calls": [{"call_id": f"c{i}", "name": "read_file", "args": {"path": f"f{i}.py"}}]})
        items.append({"seq": 10 * i + 4, "role": "tool", "call_id": f"c{i}", "output": "r" * size, "is_error": False})
    return items


def _openai(server: ScriptedServer, **kw: object) -> OpenAISummarizer:
    return OpenAISummarizer("test-model", base_url=server.url, api_key="k", backoff=0.01, **kw)  # type: ignore[arg-type]


def test_openai_success_streams_the_summary_and_measures_timings() -> None:
    half = len(GOOD) // 2
    with ScriptedServer([sse(GOOD[:half], GOOD[half:])]) as srv:
        res = _openai(srv).summarize(SummaryRequest(_items()))
    assert res.summary == extract_summary(GOOD) and res.stage == "verbatim" and res.error is None
    assert [a["outcome"] for a in res.attempts] == ["success"]
    t = res.timings
    assert t["deltas"] == 2 and t["ttft_ms"] is not None and t["stream_ms"] is not None and t["max_gap_ms"] >= 0
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["model"] == "test-model" and req["stream"] is True
    assert "request 5" in req["messages"][1]["content"] and "Optional Next Step" in req["messages"][1]["content"]
    assert srv.headers[0]["Authorization"] == "Bearer k"


def test_openai_500_then_success_is_retried() -> None:
    with ScriptedServer([error(500, "upstream broke"), sse(GOOD)]) as srv:
        res = _openai(srv).summarize(SummaryRequest(_items()))
    assert res.summary and [a["outcome"] for a in res.attempts] == ["transient", "success"]
    assert "HTTP 500: upstream broke" in res.attempts[0]["error"] and len(srv.requests) == 2


def test_openai_degenerate_summary_is_retried() -> None:
    with ScriptedServer([sse("<summary>too short</summary>"), plain(GOOD)]) as srv:
        res = _openai(srv).summarize(SummaryRequest(_items()))
    assert [a["outcome"] for a in res.attempts] == ["degenerate", "success"]
    assert res.attempts[0]["summary_chars"] == len("too short") and res.summary == extract_summary(GOOD)


def test_degenerate_threshold_is_configurable() -> None:
    with ScriptedServer([sse("<summary>short but fine</summary>")]) as srv:
        res = _openai(srv, min_chars=5).summarize(SummaryRequest(_items()))
    assert res.summary == "short but fine"


def test_three_attempts_per_stage_then_give_up() -> None:
    with ScriptedServer([error(503, "busy")] * 3) as srv:
        res = _openai(srv).summarize(SummaryRequest(_items()))
    assert res.summary is None and res.error_class == "exhausted" and len(srv.requests) == 3


def test_deterministic_error_stops_at_once() -> None:
    with ScriptedServer([error(401, "bad key"), sse(GOOD)]) as srv:
        res = _openai(srv).summarize(SummaryRequest(_items()))
    assert res.summary is None and res.error_class == "deterministic" and "bad key" in res.error
    assert len(srv.requests) == 1


def test_context_overflow_walks_the_ladder_verbatim_fitted_lossy() -> None:
    overflow = error(400, "This model's maximum context length is 8192 tokens.", "context_length_exceeded")
    items = _items(n=8, size=4000)
    window = 37_000  # fitted budget = 37,000 - 32,768 - 200 = 4,032 tokens: the last exchanges
    with ScriptedServer([overflow, overflow, sse(GOOD)]) as srv:
        res = _openai(srv).summarize(SummaryRequest(items, window=window, tool_schema_tokens=200))
    assert [(a["stage"], a["outcome"]) for a in res.attempts] == [("verbatim", "overflow"), ("fitted", "overflow"), ("lossy", "success")]
    assert res.stage == "lossy" and res.summary
    verbatim, fitted, lossy = (r["messages"][1]["content"] for r in srv.requests)
    assert len(fitted) < len(verbatim) and "[tool result" in verbatim
    assert "[Called tools: read_file]" in lossy and "[tool result" not in lossy
    assert res.attempts[1]["input_items"] < res.attempts[0]["input_items"]


def test_overflow_even_when_lossy_fails_with_a_clear_error() -> None:
    overflow = error(400, "prompt is too long")
    with ScriptedServer([overflow] * 3) as srv:
        res = _openai(srv).summarize(SummaryRequest(_items()))
    assert res.summary is None and res.error_class == "overflow" and len(srv.requests) == 3


def test_unreachable_endpoint_is_transient(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(k, "127.0.0.1")
    with ScriptedServer([]) as srv:
        url = srv.url
    res = OpenAISummarizer("m", base_url=url, api_key="k", backoff=0.0, attempts=2).summarize(SummaryRequest(_items()))
    assert [a["outcome"] for a in res.attempts] == ["transient", "transient"]


def test_openai_without_key_or_base_url_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError):
        get_summarizer("openai:gpt-x")


def test_fitting_keeps_the_leading_system_item_and_never_starts_on_a_tool_result() -> None:
    items = _items(n=5, size=400)
    budget = item_tokens(items[0]) + sum(item_tokens(i) for i in items[-4:])
    kept = fit_items(items, budget)
    assert kept[0] == items[0]
    assert kept[1]["role"] != "tool"
    assert kept[-1] == items[-1] and sum(item_tokens(i) for i in kept) <= budget


def test_lossy_items_drop_results_and_name_the_calls() -> None:
    items = [{"role": "user", "text": "look", "images": ["h1"]}, *_items(n=1)[2:]]
    out = lossy_items(items)
    assert out[0]["text"] == "look [image]" and "images" not in out[0]
    assert out[1]["text"] == "step 0\n[Called tools: read_file]" and "tool_calls" not in out[1]
    assert all(i["role"] != "tool" for i in out)


def test_stream_timer_keeps_first_last_count_and_largest_gap() -> None:
    t = StreamTimer(clock=lambda: 10.0)
    for now in (10.5, 10.6, 11.6, 11.7):
        t.delta(now)
    r = t.report(12.0)
    assert r == {"ttft_ms": 500.0, "stream_ms": 1200.0, "deltas": 4, "max_gap_ms": 1000.0, "total_ms": 2000.0}
    assert StreamTimer.__slots__  # O(1): a fixed set of fields, whatever the number of deltas


def test_extract_summary_takes_the_last_summary_block() -> None:
    assert extract_summary("<analysis>x</analysis><summary>a</summary> <summary> b </summary>") == "b"
    assert extract_summary("<analysis>x</analysis>plain") == "plain"


def _script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "summarise.py"
    p.write_text(body)
    return f"{sys.executable} {p}"


def test_cmd_gets_the_prompt_on_stdin_and_the_summary_from_stdout(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "import sys\nprompt = sys.stdin.read()\nprint('<summary>' + ('saw request 3; ' if 'request 3' in prompt else '') + 'x' * 600 + '</summary>')\n")
    res = get_summarizer(f"cmd:{cmd}").summarize(SummaryRequest(_items()))
    assert res.summary is not None and res.summary.startswith("saw request 3; ") and res.summarizer == f"cmd:{cmd}"


def test_cmd_runs_without_a_shell(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "import sys\nsys.stdin.read()\nprint(sys.argv[1] * 600)\n") + " '$HOME;'"
    res = CmdSummarizer(cmd, backoff=0).summarize(SummaryRequest(_items()))
    assert res.summary is not None and res.summary.startswith("$HOME;$HOME;")


def test_cmd_timeout_is_retried_then_reported(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "import time\ntime.sleep(5)\n")
    res = CmdSummarizer(cmd, timeout=0.3, backoff=0, attempts=2).summarize(SummaryRequest(_items()))
    assert [a["outcome"] for a in res.attempts] == ["transient", "transient"] and res.summary is None


def test_cmd_failing_is_deterministic(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "import sys\nsys.stderr.write('model not loaded\\n')\nsys.exit(4)\n")  # 3 would report an overflow
    res = CmdSummarizer(cmd, backoff=0).summarize(SummaryRequest(_items()))
    assert res.error_class == "deterministic" and "exited 4: model not loaded" in res.error and len(res.attempts) == 1


def test_unknown_summarizer_is_a_usage_error() -> None:
    for spec in ("magic", "cmd:", "openai:"):
        with pytest.raises(UsageError):
            get_summarizer(spec)


def test_tool_schemas_count_against_the_ladder_budgets() -> None:
    from catty_ctx.compact.ladder import tool_schema_tokens

    tools = [{"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}}]
    assert tool_schema_tokens({"tools": tools}) == item_tokens(tools[0]) > 0
    assert tool_schema_tokens(None) == 0 and tool_schema_tokens({"tools": "x"}) == 0


def test_a_bad_backoff_setting_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATTY_CTX_RETRY_BACKOFF", "soon")
    with pytest.raises(UsageError, match="CATTY_CTX_RETRY_BACKOFF"):
        get_summarizer("cmd:true")
    monkeypatch.setenv("CATTY_CTX_RETRY_BACKOFF", "0.5")
    assert get_summarizer("cmd:true").backoff == 0.5  # type: ignore[attr-defined]
