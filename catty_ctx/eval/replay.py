"""`eval --replay ROOT --summarizer NAME`: Grok Build's compaction requests summarised again by
another summariser, and both summaries scored on the same facts (docs/eval.md#replaying-grok-build-compactions).

Grok keeps, for a compaction made in one pass, `compaction_requests/<id>.json`: the exact
history it sent its summariser (`chat_history`, the instruction appended last) and the summary
that came back. Each request is a case: the history becomes view items (the appended
instruction left out: every summariser brings its own), each `--summarizer` summarises them,
and the facts of the span are those `eval --native` derives for the compaction the request
made (the `compaction_checkpoint` nearest in time to the request). The sources are only read.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..compact.ladder import SummaryRequest, extract_summary
from ..compact.summarizers import get_summarizer
from ..errors import UsageError
from ..formats import grok as layout
from ..formats.roots import NativeSource
from ..sources import import_session
from .native import session_cases

_INSTRUCTION = "Your task is to produce"  # how grok's summariser instruction (appended last) opens


def request_items(history: list[Any]) -> list[dict[str, Any]]:
    """A request's `chat_history` as view items, without the instruction grok appended."""
    items: list[dict[str, Any]] = []
    for row in history:
        if not isinstance(row, dict):
            continue
        kind = row.get("type")
        if kind == "system":
            items.append({"role": "system", "text": str(row.get("content") or "")})
        elif kind == "user":
            parts = row.get("content")
            text = "\n".join(p.get("text", "") for p in parts if isinstance(p, dict)) if isinstance(parts, list) else str(parts or "")
            items.append({"role": "user", "text": text})
        elif kind == "assistant":
            item: dict[str, Any] = {"role": "assistant", "text": str(row.get("content") or "")}
            calls = [{"call_id": str(c.get("id")), "name": str(c.get("name") or ""), "args": _args(c.get("arguments"))}
                     for c in row.get("tool_calls") or () if isinstance(c, dict)]
            if calls:
                item["tool_calls"] = calls
            items.append(item)
        elif kind == "tool_result":
            items.append({"role": "tool", "call_id": str(row.get("tool_call_id")), "output": str(row.get("content") or ""),
                          "is_error": False})
    if items and items[-1]["role"] == "user" and items[-1]["text"].lstrip().startswith(_INSTRUCTION):
        items.pop()
    return items


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def _when(stamp: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _cases_by_time(folder: Path) -> list[tuple[float, Any]]:
    """The session's compactions as `eval --native` scores them, with the time each was made."""
    native = NativeSource(layout.GROK, folder / layout.LOG)
    cases = session_cases(native, str(folder))
    with import_session(native, warn=None) as s:
        stamps = [ev["ts"] for ev in s.events(warn=None) if ev["kind"] == "compaction" and ev.get("agent") is None]
    return [(when, case) for when, case in zip((_when(t) for t in stamps), cases) if when is not None]


def replay(root: str, summarizers: list[str], **options: Any) -> dict[str, Any]:
    """Every compaction request under ROOT, summarised again by each of SUMMARIZERS; per request
    the facts found in grok's summary and in each new one, and the totals."""
    path = Path(root)
    if not path.exists():
        raise UsageError(f"{root}: no such file or directory")
    if not summarizers:
        raise UsageError("--replay needs --summarizer (extractive, cmd:CMD or openai:MODEL: the summariser to compare with grok's)")
    chosen = {spec: get_summarizer(spec, **options) for spec in summarizers}
    rows: list[dict[str, Any]] = []
    for folder in layout.sessions_under(path, children=True):
        requests = sorted((folder / "compaction_requests").glob("*.json"))
        if not requests:
            continue
        cases = _cases_by_time(folder)
        for req_path in requests:
            doc = orjson.loads(req_path.read_bytes())
            made = _when(doc.get("created_at"))
            case = min(cases, key=lambda c: abs(c[0] - made))[1] if cases and made is not None else None
            facts = case.facts if case is not None else []
            own = extract_summary(doc["summary"]) if isinstance(doc.get("summary"), str) else ""
            items = request_items(doc.get("chat_history") or [])
            row: dict[str, Any] = {"session": str(folder), "request": req_path.name, "model": doc.get("model"),
                                   "trigger": doc.get("trigger"), "items": len(items), "facts": len(facts),
                                   "grok": {"chars": len(own), "recall": _recall(facts, own)}, "replays": []}
            for spec, summarizer in chosen.items():
                result = summarizer.summarize(SummaryRequest(items))
                text = result.summary or ""
                row["replays"].append({"summarizer": spec, "chars": len(text), "error": result.error,
                                       "recall": _recall(facts, text) if result.summary is not None else None})
            rows.append(row)
    return {"replay": {"root": root, "requests": rows, "total": _total(rows, list(chosen))}}


def _recall(facts: list[Any], text: str) -> float | None:
    return round(sum(f.text in text for f in facts) / len(facts), 4) if facts else None


def _total(rows: list[dict[str, Any]], specs: list[str]) -> dict[str, Any]:
    facts = sum(r["facts"] for r in rows)

    def pooled(found: list[tuple[int, float | None]]) -> float | None:
        kept = sum(round(n * r) for n, r in found if r is not None)
        return round(kept / facts, 4) if facts else None

    return {"requests": len(rows), "facts": facts,
            "grok_recall": pooled([(r["facts"], r["grok"]["recall"]) for r in rows]),
            "replay_recall": {spec: pooled([(r["facts"], p["recall"]) for r in rows for p in r["replays"] if p["summarizer"] == spec])
                              for spec in specs}}
