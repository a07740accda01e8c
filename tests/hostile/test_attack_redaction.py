"""Issue 43: the three shapes the campaign found surviving redaction (a real-length
`sk-ant-api03-…`, `sk-proj-…`, an npm `_authToken=npm_…`), at the start of a line: in the
artifact the compaction keeps (its values searched as JSON, where a line break is `\\n`) and
on stderr, none survives."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from support import call, cli, msg, result, session_event, write_log

from catty_ctx.redact import redact_many, redact_text

ANTHROPIC = "sk-ant-api03-" + "Qw3_rT-9" * 11 + "AA"
OPENAI = "sk-proj-" + "Lm4-Np_7Xz" * 15
NPM = "npm_" + "A1b2C3d4e5" * 3 + "F6g7H8"
SHAPES = {"anthropic": (f"ANTHROPIC_API_KEY=\n{ANTHROPIC}", ANTHROPIC[13:]),
          "openai": (f"key:\n{OPENAI}\n", OPENAI[8:]),
          "npm": (f"//registry.npmjs.org/:_authToken={NPM}\n_authToken={NPM}", NPM[4:])}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_shape_is_redacted_as_text_and_as_json(name: str) -> None:
    text, secret = SHAPES[name]
    for shown in (text, orjson.dumps(text).decode(), f"line before\\n{text}", f"\t{text}"):
        out, n = redact_text(shown)
        assert secret not in out and n >= 1, (shown, out)
    values, n = redact_many([text, {"cmd": text}, [f"a\n{text}"]])
    assert secret not in orjson.dumps(values).decode() and n >= 3


def test_none_survives_into_the_compaction_request_or_stderr(tmp_path: Path) -> None:
    events = [session_event(), msg("system", "sys")]
    for i, (text, _secret) in enumerate(SHAPES.values()):
        events += [msg("user", f"step {i}:\n{text}", f"u{i}"), call(f"c{i}", "sh", {"cmd": f"cat .npmrc\n{text}"}),
                   result(f"c{i}", f"output {i}:\n{text}")]
    s = write_log(tmp_path / "s", events)
    proc = cli("compact", str(s), "--force", "--json")
    assert proc.returncode == 0, proc.stderr
    stored = b"".join(p.read_bytes() for p in (s / "compaction_requests").glob("*.json"))
    assert stored
    assert [name for name, (_t, secret) in SHAPES.items() if secret.encode() in stored or secret.encode() in proc.stderr] == []
