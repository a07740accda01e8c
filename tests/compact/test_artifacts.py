"""Request artifacts: credentials redacted by default (the log keeps them), and the fast
first look over a large artifact never lets a secret shape through."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from catty_ctx.compact.pipeline import compact_session
from catty_ctx.compact.artifacts import load_artifact
from catty_ctx.redact import redact_many
from catty_ctx.session.store import Session
from support import call, msg, result, session_event, write_log
from test_redact import SECRETS

MORE = {
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "bearer_token": "Authorization: Bearer abcdefghijklmnop1234",
    "secret_assignment": "CLIENT_SECRET=abcdefgh12345678",
}


@pytest.mark.parametrize("kind", sorted({**SECRETS, **MORE}))
def test_every_secret_shape_passes_the_first_look(kind: str) -> None:
    secret = {**SECRETS, **MORE}[kind]
    clean = [{"role": "user", "text": f"item {i}"} for i in range(50)]
    out, n = redact_many([*clean, {"role": "tool", "output": f"before {secret} after"}, *clean])
    assert n >= 1 and f"[REDACTED:{kind}]" in out[50]["output"] and out[:50] == clean and out[51:] == clean


def test_values_without_an_anchor_come_back_untouched() -> None:
    items = [{"role": "assistant", "text": "parse() returns [] now", "tool_calls": [{"call_id": "c", "name": "t", "args": {"n": 1}}]}]
    assert redact_many(items) == (items, 0)


def _secretive(path: Path) -> Path:
    return write_log(path, [
        session_event(),
        msg("user", f"Use this key: {SECRETS['openai_key']}", "u1"),
        msg("assistant", "ok", "a1"),
        call("c1", "read_file", {"path": ".env"}), result("c1", "DB_PASSWORD=hunter2hunter2\n"),
    ])


def test_artifacts_are_redacted_by_default_and_the_log_keeps_everything(tmp_path: Path) -> None:
    s = _secretive(tmp_path / "s")
    res = compact_session(Session.open(s), force=True)
    raw = (s / res.artifact).read_bytes()
    assert SECRETS["openai_key"].encode() not in raw and b"hunter2hunter2" not in raw
    doc = load_artifact(s / res.artifact)
    assert doc["redacted"] >= 3  # in the items, and in the summary that quotes them
    assert "[REDACTED:openai_key]" in doc["input"]["items"][0]["text"]
    log = (s / "updates.jsonl").read_bytes()
    assert SECRETS["openai_key"].encode() in log.splitlines()[1]  # the source of truth is never rewritten


def test_no_redact_keeps_the_exact_input(tmp_path: Path) -> None:
    s = _secretive(tmp_path / "s")
    res = compact_session(Session.open(s), force=True, redact=False)
    doc = orjson.loads((s / res.artifact).read_bytes())
    assert doc["redacted"] is None and SECRETS["openai_key"] in doc["input"]["items"][0]["text"]
