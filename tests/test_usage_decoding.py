"""The usage scan's typed decoding, and `--since` reading only the files that can hold newer calls."""
from __future__ import annotations

import json
import mmap
import os
import time
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catty_ctx import usage as U
from catty_ctx.usage import claude
from usage_trees import claude_tree

MISSING = object()
# Every shape a field can take in a damaged or unexpected log: absent, null, the wrong type, huge.
ODD = st.one_of(
    st.just(MISSING), st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1]),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6), st.lists(st.integers(0, 9), max_size=2),
    st.dictionaries(st.sampled_from(["a", "input_tokens", "ephemeral_5m_input_tokens"]), st.integers(-5, 10**6), max_size=2),
)
COUNT = st.one_of(st.integers(0, 10**6), ODD)
TEXT = st.one_of(st.sampled_from(["msg_01", "req_1", "abc", ""]), ODD)
TIME = st.one_of(st.sampled_from(["2026-02-01T10:00:00.000Z", "2026-02-01T23:59:59.999Z", "2026-02-01T10:00:00+05:30", "2026-02-01",
                                  "2026-02-01T24:00:00.000Z", "not a time"]), ODD)


def _put(obj: dict[str, Any], name: str, value: Any) -> None:
    if value is not MISSING:
        obj[name] = value


@st.composite
def usage_lines(draw: Any) -> bytes:
    usage: Any = {}
    for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        _put(usage, name, draw(COUNT))
    _put(usage, "cache_creation", draw(st.one_of(ODD, st.just({"ephemeral_5m_input_tokens": 7}))))
    if draw(st.integers(0, 9)) == 0:
        usage = draw(ODD)  # the usage object itself of another type
    message: Any = {"role": "assistant", "content": [{"type": "text", "text": "x"}]}
    _put(message, "usage", usage)
    for name, values in (("id", TEXT), ("model", st.one_of(st.sampled_from(["claude-sonnet-4-20250514", "<synthetic>"]), ODD))):
        _put(message, name, draw(values))
    if draw(st.integers(0, 9)) == 0:
        message = draw(ODD)
    line: dict[str, Any] = {"type": "assistant"}
    _put(line, "message", message)
    for name, values in (("timestamp", TIME), ("requestId", TEXT), ("sessionId", TEXT), ("uuid", TEXT), ("agentId", TEXT),
                         ("isSidechain", st.one_of(st.booleans(), ODD)), ("costUSD", st.one_of(st.floats(0, 5), ODD))):
        _put(line, name, draw(values))
    line["x"] = {"output_tokens": 1}  # the marker: every line reaches the decoders
    return json.dumps(line).encode()  # (not orjson: it cannot write the huge integers)


def _general(lines: list[bytes], path: str) -> tuple[list[Any], int]:
    """What the general decoder (orjson, then the same rules) makes of LINES: records and bad lines."""
    project, session, stem = claude.context(path)
    recs, bad = [], 0
    for line in lines:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad += 1
            continue
        rec = claude.record(obj, session, project, stem, {}.setdefault) if type(obj) is dict else "not an object"
        if type(rec) is str:
            bad += 1
        elif rec is not None:
            recs.append(rec)
    return recs, bad


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(usage_lines(), min_size=1, max_size=6))
def test_typed_decoding_reads_every_odd_usage_line_as_the_general_decoder_does(tmp_path: Path, lines: list[bytes]) -> None:
    log = tmp_path / "projects" / "-p" / "s.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        recs: list[Any] = []
        bad: list[tuple[int, str]] = []
        claude.parse(mm, 0, len(mm), str(log), None, recs, bad)
    want, want_bad = _general(lines, str(log))
    assert recs == want and len(bad) == want_bad
    totals = [U.build_ledger(r, by="day", tz=U.timezone_named("UTC")).totals for r in (recs, want)]
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
