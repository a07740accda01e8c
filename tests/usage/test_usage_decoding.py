"""The usage scan's typed decoding, and `--since` reading only the files that can hold newer calls."""
from __future__ import annotations

import json
import mmap
import os
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catty_ctx.usage import pipeline as U
from catty_ctx.usage import catty, claude, codex
from support.usage_trees import claude_tree

MISSING = object()
# Every shape a field can take in a damaged or unexpected log: absent, null, the wrong type, huge.
ODD = st.one_of(
    st.just(MISSING), st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1]),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6), st.lists(st.integers(0, 9), max_size=2),
    st.dictionaries(st.sampled_from(["a", "input_tokens", "ephemeral_5m_input_tokens"]), st.integers(-5, 10**6), max_size=2),
)
COUNT = st.integers(0, 10**6)
TEXT = st.sampled_from(["msg_01", "req_1", "abc", ""])
TIME = st.sampled_from(["2026-02-01T10:00:00.000Z", "2026-02-01T23:59:59.999Z", "2026-02-01T10:00:00+05:30", "2026-02-01",
                        "2026-02-01T24:00:00.000Z", "not a time", "2026-02-01T10:00:00", "2026-02-01T10:00:00.1234567Z",
                        "2026-02-01 10:00:00.5z", "20260201T100000Z", "2026-02-01T23:59:60Z"])
CLAUDE_FIELDS = {
    "input_tokens": COUNT, "output_tokens": COUNT, "cache_creation_input_tokens": COUNT, "cache_read_input_tokens": COUNT,
    "cache_creation": st.just({"ephemeral_5m_input_tokens": 7}), "usage": st.just("the usage object"), "id": TEXT,
    "model": st.sampled_from(["claude-sonnet-4-20250514", "<synthetic>"]), "message": st.just("the message object"), "timestamp": TIME,
    "requestId": TEXT, "sessionId": TEXT, "uuid": TEXT, "agentId": TEXT, "isSidechain": st.booleans(), "costUSD": st.floats(0, 5),
}
CODEX_FIELDS = {
    "input_tokens": COUNT, "cached_input_tokens": COUNT, "output_tokens": COUNT, "reasoning_output_tokens": COUNT, "total_tokens": COUNT,
    "total_token_usage": st.just("the totals"), "last_token_usage": st.just("the last call"), "info": st.just("the info object"),
    "payload": st.just("the payload"), "id": TEXT, "cwd": TEXT, "model": st.sampled_from(["gpt-5-codex", "o3"]), "timestamp": TIME,
}
CATTY_FIELDS = {
    "v": st.just(1), "seq": st.integers(0, 50), "ts": TIME, "kind": st.sampled_from(["usage", "usage", "usage", "message", ""]),
    "agent": st.sampled_from(["main", "sub-1", None]), "model": st.sampled_from(["claude-sonnet-4-20250514", "gpt-5"]),
    "input": COUNT, "output": COUNT, "cache_read": COUNT, "cache_write": COUNT, "reasoning": COUNT, "cost_usd": st.floats(0, 5),
    "request_id": TEXT, "incomplete": st.booleans(), "off_branch": st.booleans(),
}


def _put(obj: dict[str, Any], name: str, value: Any) -> None:
    if value is not MISSING:
        obj[name] = value


def _values(draw: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """A value per field: as the agent writes it, except for up to three fields of an odd shape."""
    odd = draw(st.sets(st.sampled_from(sorted(fields)), max_size=3))
    return {name: draw(ODD) if name in odd else draw(fields[name]) for name in fields}


def _obj(v: dict[str, Any], name: str, inner: dict[str, Any]) -> Any:
    """INNER, unless the draw gave the object NAME an odd shape (MISSING included)."""
    return inner if type(v[name]) is str and v[name].startswith("the ") else v[name]


@st.composite
def usage_lines(draw: Any) -> bytes:
    v = _values(draw, CLAUDE_FIELDS)
    usage: dict[str, Any] = {}
    for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation"):
        _put(usage, name, v[name])
    message: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": "x"}]}
    _put(message, "usage", _obj(v, "usage", usage))
    for name in ("id", "model"):
        _put(message, name, v[name])
    line: dict[str, Any] = {"type": "assistant"}
    _put(line, "message", _obj(v, "message", message))
    for name in ("timestamp", "requestId", "sessionId", "uuid", "agentId", "isSidechain", "costUSD"):
        _put(line, name, v[name])
    line["x"] = {"output_tokens": 1}  # the marker: every line reaches the decoders
    return json.dumps(line).encode()  # (not orjson: it cannot write the huge integers)


@st.composite
def codex_lines(draw: Any) -> bytes:
    v = _values(draw, CODEX_FIELDS)
    tokens: dict[str, Any] = {}
    for name in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens"):
        _put(tokens, name, v[name])
    kind = draw(st.sampled_from(["token_count", "token_count", "token_count", "turn_context", "session_meta"]))
    if kind == "token_count":
        info: dict[str, Any] = {}
        _put(info, "total_token_usage", _obj(v, "total_token_usage", tokens))
        _put(info, "last_token_usage", _obj(v, "last_token_usage", dict(tokens)))
        payload: dict[str, Any] = {"type": "token_count"}
        _put(payload, "info", _obj(v, "info", info))
        line: dict[str, Any] = {"type": "event_msg"}
    else:
        payload = {"instructions": "long text"}
        for name in ("id", "cwd", "model"):
            _put(payload, name, v[name])
        line = {"type": kind}
    _put(line, "payload", _obj(v, "payload", payload))
    _put(line, "timestamp", v["timestamp"])
    line["x"] = ["token_count"]  # the marker: every line reaches the decoders
    return json.dumps(line).encode()


@st.composite
def catty_lines(draw: Any) -> bytes:
    v = _values(draw, CATTY_FIELDS)
    line: dict[str, Any] = {}
    for name in CATTY_FIELDS:
        if name not in ("agent", "cost_usd", "request_id", "incomplete", "off_branch", "cache_read", "cache_write", "reasoning") \
                or draw(st.booleans()):
            _put(line, name, v[name])
    line["x"] = ["usage"]  # the marker: every line reaches the decoders
    return json.dumps(line).encode()


def _both_ways(module: Any, path: Path, lines: list[bytes]) -> list[tuple[list[Any], list[tuple[int, str]], Any]]:
    """(records, bad lines, state) of the typed read of LINES, then of the general decoder's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    out = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for typed in (True, False):
            recs: list[Any] = []
            bad: list[tuple[int, str]] = []
            state = module.parse(mm, 0, len(mm), str(path), None, recs, bad, typed=typed)
            out.append((recs, bad, state))
    return out


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@FUZZ
@given(st.lists(usage_lines(), min_size=1, max_size=6))
def test_claude_lines_of_every_odd_shape_read_typed_as_the_general_decoder_reads_them(tmp_path: Path, lines: list[bytes]) -> None:
    typed, general = _both_ways(claude, tmp_path / "projects" / "-p" / "s.jsonl", lines)
    assert typed == general  # the same records, the same bad lines (and no exception)
    totals = [U.build_ledger(r, by="day", tz=U.timezone_named("UTC")).totals for r in (typed[0], general[0])]
    assert totals[0] == totals[1]


@FUZZ
@given(st.lists(codex_lines(), min_size=1, max_size=8))
def test_codex_lines_of_every_odd_shape_read_typed_as_the_general_decoder_reads_them(tmp_path: Path, lines: list[bytes]) -> None:
    typed, general = _both_ways(codex, tmp_path / "rollout-x.jsonl", lines)
    assert typed == general
    totals = [U.build_ledger(r, by="model").totals for r in (typed[0], general[0])]
    assert totals[0] == totals[1]


@FUZZ
@given(st.lists(catty_lines(), min_size=1, max_size=6))
def test_catty_usage_events_of_every_odd_shape_read_typed_as_the_general_decoder_reads_them(tmp_path: Path, lines: list[bytes]) -> None:
    first = json.dumps({"v": 1, "seq": 0, "ts": "2026-02-01T09:00:00.000Z", "kind": "session", "session_id": "s"}).encode()
    typed, general = _both_ways(catty, tmp_path / "s" / "updates.jsonl", [first, *lines])
    assert typed == general  # the same records, the same bad lines named the same way (and no exception)
    totals = [U.build_ledger(r, by="agent").totals for r in (typed[0], general[0])]
    assert totals[0] == totals[1]


def test_since_reads_only_files_written_on_or_after_that_day(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=5, projects=2, sessions=4)
    logs = sorted((tmp_path / "c").rglob("*.jsonl"))
    everything, _ = U.usage([tmp_path / "c"], by="day", timezone_name="UTC", use_cache=False)
    day = everything.rows[-1]["day"]  # the last day with calls
    old = time.mktime(time.strptime("2020-01-01", "%Y-%m-%d"))
    new_files = [p for p in logs if day in p.read_text()]
    for p in logs:
        if p not in new_files:
            os.utime(p, (old, old))  # last written long before `day`
            with open(p, "ab") as f:
                f.write(b"{\"output_tokens\": never read\n")
            os.utime(p, (old, old))
    assert 0 < len(new_files) < len(logs)
    for use_cache, parsed in ((False, len(new_files)), (True, len(new_files)), (True, 0)):  # cold, cold with caches, the answer cached
        led, scan = U.usage([tmp_path / "c"], by="day", since=day, timezone_name="UTC", use_cache=use_cache)
        assert led.rows == [r for r in everything.rows if r["day"] >= day]
        assert scan.bad_lines == 0 and scan.files == len(logs) and scan.files_parsed == parsed
    _, scan = U.usage([tmp_path / "c"], by="day", timezone_name="UTC")
    assert scan.bad_lines == len(logs) - len(new_files)  # without --since every file is read


def test_every_claude_fixture_reads_the_same_whole_typed_and_line_by_line(tmp_path: Path) -> None:
    """The typed read decodes a log's lines whole in one call when none is odd; each fixture
    (real shapes: progress records, compact summaries, media, queued prompts, cut files) must
    give the same records and bad lines as the general decoder."""
    root = Path(__file__).resolve().parents[2] / "fixtures" / "import" / "claude"
    logs = sorted(root.rglob("*.jsonl"))
    assert len(logs) > 10
    whole = 0
    for log in logs:
        data = log.read_bytes()
        end = data.rfind(b"\n") + 1
        if not end:
            continue
        with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            project, session, stem = claude.context(str(log))
            whole += claude._whole(mm, 0, end, session, project, stem) is not None
            got = []
            for typed in (True, False):
                recs: list[Any] = []
                bad: list[tuple[int, str]] = []
                claude.parse(mm, 0, end, str(log), None, recs, bad, typed=typed)
                got.append((recs, bad))
        assert got[0] == got[1], log
    assert whole > len(logs) // 2  # (most are read whole)
