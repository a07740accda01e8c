"""The usage scan's shortcuts before decoding: each must keep every call a full read finds.

opencode's storage files are told apart by two byte searches before any is decoded, a log's
kind by its first lines alone; a file written in a form the shortcut did not expect (keys in
another order, pretty-printed, escaped text around the marker, blank first lines) must count
as the full read counts it.
"""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from catty_ctx.usage import pipeline as U
from catty_ctx.usage import opencode, walk

TOKENS = {"input": 120, "output": 30, "reasoning": 7, "cache": {"read": 900, "write": 40}}


def _storage(root: Path, message: dict, parts: list[dict], dump) -> Path:
    storage = root / "storage"
    (storage / "session" / "prj_1").mkdir(parents=True)
    folder = storage / "message" / message["sessionID"]
    folder.mkdir(parents=True)
    (folder / f"{message['id']}.json").write_text(dump(message))
    pf = storage / "part" / message["id"]
    pf.mkdir(parents=True)
    for p in parts:
        (pf / f"{p['id']}.json").write_text(dump(p))
    return storage


def _message(**extra) -> dict:
    return {"id": "msg_a1", "sessionID": "ses_1", "role": "assistant", "time": {"created": 1770000000000}, "modelID": "gpt-5",
            "providerID": "openai", "cost": 0, "path": {"cwd": "/w", "root": "/w"}, **extra}


def _calls(path: Path) -> list[tuple[int, int, int, int]]:
    ledger, _scan = U.usage([str(path)], by="model", use_cache=False)
    return [(r["input"], r["output"], r["cache_read"], r["calls"]) for r in ledger.rows]


def _step(pid: str, tokens: dict, order: str = "type-first") -> dict:
    fields = {"id": pid, "sessionID": "ses_1", "messageID": "msg_a1", "reason": "stop", "cost": 0, "tokens": tokens}
    return {"type": "step-finish", **fields} if order == "type-first" else {**fields, "type": "step-finish"}


def test_opencode_steps_count_whatever_order_and_layout_their_keys_have(tmp_path: Path) -> None:
    # opencode writes its files indented; a step's `type` may come after its tokens; text around them escaped.
    escaped = {"id": "prt_a0", "sessionID": "ses_1", "messageID": "msg_a1", "type": "text", "text": 'say "step-finish" \\"tokens\\"'}
    for i, dump in enumerate((lambda o: json.dumps(o, indent=2), lambda o: json.dumps(o, separators=(",", ":")), json.dumps)):
        parts = [escaped, _step("prt_a1", TOKENS), _step("prt_a2", TOKENS, order="type-last")]
        storage = _storage(tmp_path / str(i), _message(tokens=TOKENS), parts, dump)
        # two steps (the message's own tokens, the last step's, not counted again); output includes the reasoning
        assert _calls(storage) == [(240, 74, 1800, 2)]


def test_an_opencode_message_read_by_its_own_tokens_counts_them_in_any_layout(tmp_path: Path) -> None:
    message = _message()
    message = {"tokens": TOKENS, **message}  # (tokens first: before role, as another writer may order them)
    storage = _storage(tmp_path, message, [], lambda o: json.dumps(o, indent=4))
    assert _calls(storage) == [(120, 37, 900, 1)]


def test_an_opencode_storage_file_read_under_the_surveys_key_or_its_own(tmp_path: Path) -> None:
    storage = _storage(tmp_path, _message(tokens=TOKENS), [_step("prt_a1", TOKENS)], lambda o: json.dumps(o, indent=2))
    part = storage / "part" / "msg_a1" / "prt_a1.json"
    st_ = part.stat()
    key = (st_.st_size, st_.st_mtime_ns, st_.st_ino)
    _p, by_survey, nbytes, error = opencode.scan_storage_file(str(part), key, 5)
    _p, by_itself, _n, _e = opencode.scan_storage_file(str(part), None, 5)
    assert error is None and nbytes == st_.st_size and by_survey == by_itself and len(by_survey.recs) == 1
    # A file that grew since the survey is read whole (not cut at the size the survey saw).
    part.write_text(json.dumps(_step("prt_a1", TOKENS), indent=2) + " " * 100_000)
    _p, grown, nbytes, error = opencode.scan_storage_file(str(part), key, 5)
    assert error is None and nbytes == part.stat().st_size and len(grown.recs) == 1 and (grown.size, grown.ino) == (key[0], key[2])


LINE = st.one_of(
    st.just(b""), st.just(b"   "), st.sampled_from([
        b'{"type":"user","sessionId":"s","uuid":"u"}', b'{"kind":"usage","v":1,"seq":3}', b'{"type":"session_meta","payload":{}}',
        b'{"sessionId":"g","projectHash":"h","startTime":"t"}', b'{"a":1}', b"not json", b'{"torn', b"[1,2]", b'{"seq":1,"uuid":"x"}',
        b'{"messages":[],"sessionId":"s"}']),
    st.binary(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=9), st.booleans())
def test_a_logs_kind_is_told_from_its_first_lines_as_from_its_first_mebibyte(lines: list[bytes], newline_at_end: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if newline_at_end else b"")
    whole = lambda: data  # noqa: E731
    assert walk.sniff(walk.sniff_head(data, len(data)), whole) == walk.sniff(data[: 1 << 20], whole)


def test_a_log_whose_first_lines_are_blank_or_long_is_still_told_by_content(tmp_path: Path) -> None:
    record = {"type": "assistant", "sessionId": "s1", "uuid": "u1", "requestId": "r1", "timestamp": "2026-02-01T10:00:00.000Z",
              "message": {"id": "m1", "model": "claude-sonnet-4-5-20250929",
                          "usage": {"input_tokens": 5, "output_tokens": 6, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}
    log = tmp_path / "notes.jsonl"  # (a name that tells nothing: the content does)
    log.write_bytes(b"\n\n  \n\n\n" + json.dumps(record).encode() + b"\n")
    assert _calls(log) == [(5, 6, 0, 1)]
    long = dict(record, pad="x" * (2 << 20), uuid="u2", requestId="r2")  # (a first line longer than the head the sniffer may look at)
    log.write_bytes(json.dumps(long).encode() + b"\n" + json.dumps(record).encode() + b"\n")
    assert _calls(log) == [(10, 12, 0, 2)]
