"""Compaction request artifacts and offline replay (reference section 4).

`compaction_requests/<id>.json` holds the exact input a summariser got (items, continuation
state, window, prompt), its output, every attempt with its outcome and the timings. grok-build
only stores this data; `replay` runs a saved input through another summariser without
touching any session, for offline prompt iteration.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..errors import DataError, UsageError
from ..redact import redact, redact_many, scrub, secret_pieces
from ..session.events import now_ts
from ..session.layout import REQUESTS_DIR
from ..session.store import atomic_write, session_folder
from .ladder import INSTRUCTION, SYSTEM_PROMPT, SummaryRequest, SummaryResult
from .summarizers import get_summarizer

ARTIFACT_DIR = REQUESTS_DIR
ARTIFACT_SCHEMA = 1


def artifact_relpath(compaction_id: str) -> str:
    return f"{ARTIFACT_DIR}/{compaction_id}.json"


def artifact_doc(
    *,
    compaction_id: str,
    session_id: str | None,
    trigger: str,
    mode: str,
    through_seq: int,
    prefix_fp: str,
    request: SummaryRequest,
    result: SummaryResult,
    tokens_before: int,
    tokens_after: int | None,
    threshold: float,
    head: str = "full",
) -> dict[str, Any]:
    return {
        "schema_version": ARTIFACT_SCHEMA,
        "id": compaction_id,
        "session_id": session_id,
        "created_at": now_ts(),
        "trigger": trigger,
        "threshold_pct": threshold,
        "mode": mode,
        "through_seq": through_seq,
        "prefix_fp": prefix_fp,
        "summarizer": result.summarizer,
        "input": {
            "window": request.window,
            "tool_schema_tokens": request.tool_schema_tokens,
            "system_prompt": SYSTEM_PROMPT,
            "instruction": INSTRUCTION,
            "state": request.state,
            "items": request.items,
        },
        "summary": result.summary,
        "stage": result.stage,
        "error": result.error,
        "error_class": result.error_class,
        "attempts": result.attempts,
        "timings": result.timings,
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "head": head,
    }


def redacted(doc: dict[str, Any]) -> dict[str, Any]:
    """The artifact with credentials replaced by markers (catty_ctx.redact), and their count."""

    items, n_items = redact_many(doc["input"]["items"])
    rest, n_rest = redact({**doc, "input": {**doc["input"], "items": []}})
    # A summary may quote a secret of the input out of its context (the extractive one lists
    # identifiers): what was found in the input is removed from the rest too.
    rest, n_quoted = scrub(rest, secret_pieces(doc["input"]["items"]))
    rest["input"]["items"] = items
    rest["redacted"] = n_items + n_rest + n_quoted
    return rest


def write_artifact(directory: Path, doc: dict[str, Any], *, redact: bool = True) -> Path:
    """Write compaction_requests/<id>.json atomically; credentials are redacted unless asked."""
    doc = redacted(doc) if redact else {**doc, "redacted": None}
    target = directory / artifact_relpath(doc["id"])
    session_folder(target.parent)  # never a link out of the session
    atomic_write(target, orjson.dumps(doc) + b"\n")
    return target


def load_artifact(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{p}: no such artifact")
    try:
        doc = orjson.loads(p.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise DataError(f"invalid JSON ({exc})", path=str(p)) from None
    inp = doc.get("input") if isinstance(doc, dict) else None
    if not isinstance(inp, dict) or not isinstance(inp.get("items"), list):
        raise DataError("not a compaction request artifact (no input.items)", path=str(p))
    return doc


def request_of(doc: dict[str, Any]) -> SummaryRequest:
    inp = doc["input"]
    return SummaryRequest(
        items=inp["items"],
        state=inp.get("state") or {},
        window=int(inp.get("window") or 200_000),
        tool_schema_tokens=int(inp.get("tool_schema_tokens") or 0),
    )


def replay(path: str | Path, summarizer: str, **options: Any) -> dict[str, Any]:
    """Run a saved artifact's exact input through a summariser; no session is touched."""
    doc = load_artifact(path)
    result = get_summarizer(summarizer, **options).summarize(request_of(doc))
    return {"artifact": str(path), "original_summarizer": doc.get("summarizer"), **result.to_json()}
