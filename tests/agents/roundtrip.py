"""The import round trip and the native reading, checked through the program's own entry
point (in-process `cli`), on any agent file: a transcript a real CLI just wrote or a stored
copy of one."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import cli, jsonl

from catty_ctx.fork import resume
from catty_ctx.session.store import Session

# Reading native files directly (issue 26 items 2-4) lands with catty_ctx/sources.py; until
# it is on main the native-reading checks are expected to fail, and they must pass from then on.
NATIVE_PENDING = pytest.mark.xfail(
    importlib.util.find_spec("catty_ctx.sources") is None,
    reason="native reading (catty_ctx/sources.py, issue 26 items 2-4) has not landed yet",
    raises=AssertionError, strict=True,
)

# What `inspect --json` says of the view (not of where it was read from).
VIEW_FIELDS = ("session_id", "events", "kinds", "roles", "turns", "items", "tokens", "window", "percent", "fp",
               "largest", "compactions", "problems")
PROVIDERS = ("anthropic", "openai")


def ok(*args: str, input: bytes | None = None) -> bytes:
    proc = cli(*args, input=input)
    assert proc.returncode == 0, f"catty-ctx {' '.join(args)}: exit {proc.returncode}\n{proc.stderr.decode()[-2000:]}"
    return proc.stdout


def typed(prompts: list[str]) -> list[str]:
    """The prompts a user typed as conversation (slash commands are the CLI's, not turns)."""
    return [p for p in prompts if not p.startswith("/")]


def check_round_trip(source: Path, out: Path, prompts: list[str]) -> None:
    """import → repair --check 0 → resume valid for both providers → usage equal → turns kept."""
    ok("import", "auto", str(source), "--out", str(out))
    ok("repair", "--check", str(out))
    session = Session.open(out)
    for fmt in PROVIDERS:
        doc = orjson.loads(ok("resume", str(out), "--format", fmt))  # the CLI validates it against the provider's rules
        assert doc["messages"], fmt
        _, repaired = resume(session, fmt)
        assert repaired == [], (fmt, repaired)
        assert typed(prompts)[-1] in orjson.dumps(doc).decode(), f"{fmt}: the last turn is not in the resumed request"
    src = orjson.loads(ok("usage", str(source), "--json"))["totals"]
    imp = orjson.loads(ok("usage", str(out), "--json"))["totals"]
    assert src == imp and src["calls"] > 0
    events = jsonl((out / "updates.jsonl").read_bytes())
    said = [e["text"] for e in events if e["kind"] == "message" and e["role"] == "user" and not e.get("synthetic")]
    assert [t for t in said if t in prompts] == typed(prompts), said


def resumed_tool_ids(source: Path, out: Path) -> set[str]:
    ok("import", "auto", str(source), "--out", str(out))
    doc = orjson.loads(ok("resume", str(out), "--format", "anthropic"))
    return {b["id"] for m in doc["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"}


def view_fields(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: doc.get(k) for k in VIEW_FIELDS}


def native_equals_pipe(source: Path) -> None:
    """`inspect FILE --json` (view fields) and `resume FILE` (bytes) answer as
    `import auto FILE | CMD -` does, and nothing is written beside the source."""
    listing = sorted(source.parent.iterdir())
    events = ok("import", "auto", str(source))
    native = orjson.loads(ok("inspect", str(source), "--json"))
    piped = orjson.loads(ok("inspect", "-", "--json", input=events))
    assert view_fields(native) == view_fields(piped)
    for fmt in PROVIDERS:
        assert ok("resume", str(source), "--format", fmt) == ok("resume", "-", "--format", fmt, input=events), fmt
    assert sorted(source.parent.iterdir()) == listing
