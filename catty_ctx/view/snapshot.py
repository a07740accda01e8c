"""The prompt-context snapshot (`state` facet `prompt_context`) and its report: what went into
a prompt, from where, with the parts nobody recorded marked unknown (the seed's first lesson:
a prompt must be a data structure that can be dumped and explained)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..session.events import Event

if TYPE_CHECKING:
    from ..session.store import Session


PROMPT_CONTEXT_SCHEMA = 1
# The parts every report shows, known or not (dotted names for nested fields).
SNAPSHOT_PARTS = (
    "audience",
    "prompt_mode",
    "model",
    "agent_version",
    "persona",
    "instructions",
    "memory",
    "environment.os",
    "environment.shell",
    "environment.cwd",
    "environment.date",
    "environment.non_interactive",
    "environment.git_branch",
)
_META = ("schema", "sources")


def snapshot_value(parts: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    """A `prompt_context` facet value: the known parts, and where each came from.

    `parts` may be nested (`{"environment": {"cwd": …}}`) or dotted (`{"environment.cwd": …}`);
    `sources` maps a part (or a parent such as `environment`) to its origin, e.g.
    `"claude: cwd of the first record"`. Parts left out or None are unknown.
    """
    value: dict[str, Any] = {"schema": PROMPT_CONTEXT_SCHEMA}
    for key, v in parts.items():
        if v is None:
            continue
        node = value
        *path, last = key.split(".")
        for p in path:
            node = node.setdefault(p, {})
        if isinstance(v, dict) and isinstance(node.get(last), dict):
            node[last].update(v)
        else:
            node[last] = v
    value["sources"] = dict(sources)
    return value


def snapshot_event(parts: dict[str, Any], sources: dict[str, str], *, agent: str | None = None) -> dict[str, Any]:
    """The `state` event recording a prompt-context snapshot (for importers and runtimes)."""
    ev: dict[str, Any] = {"kind": "state", "facet": "prompt_context", "value": snapshot_value(parts, sources)}
    if agent:
        ev["agent"] = agent
    return ev


def _flatten(value: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, v in value.items():
        if not prefix and key in _META:
            continue
        name = prefix + key
        if isinstance(v, dict) and v:
            yield from _flatten(v, name + ".")
        else:
            yield name, v


def _source_of(name: str, sources: dict[str, Any]) -> str | None:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        src = sources.get(".".join(parts[:i]))
        if isinstance(src, str):
            return src
    return None


def context_report(session: Session, *, agent: str | None = None) -> dict[str, Any]:
    """`inspect --context`: the prompt-context snapshot, every part with its provenance.

    The latest `prompt_context` state gives the parts it records; parts it lacks are filled
    from what else the log holds (the session event's cwd and model, the latest usage's
    model, the `instructions` and `memory` facets), each naming that source; everything
    else is listed as unknown.
    """
    first: Event | None = None
    facets: dict[str, Event] = {}
    usage: Event | None = None
    wanted = ("prompt_context", "instructions", "memory")
    for ev in session.events():
        if first is None:
            first = ev
        if ev.get("agent") != agent:
            continue
        kind = ev["kind"]
        if kind == "state" and ev.get("facet") in wanted:
            facets[ev["facet"]] = ev
        elif kind == "usage":
            usage = ev
    parts: dict[str, dict[str, Any]] = {}
    snap = facets.get("prompt_context")
    snap_value = snap.get("value") if snap else None
    schema = None
    if isinstance(snap_value, dict):
        schema = snap_value.get("schema")
        sources = snap_value.get("sources")
        if not isinstance(sources, dict):
            sources = {}
        for name, v in _flatten(snap_value):
            if v is None:
                continue
            src = _source_of(name, sources) or "recorded without a source"
            parts[name] = {"value": v, "known": True, "source": src, "seq": snap["seq"] if snap else None}

    def fill(name: str, value: Any, source: str, seq: int) -> None:
        if name not in parts and value not in (None, "", []):
            parts[name] = {"value": value, "known": True, "source": source, "seq": seq}

    ses = first if first and first.get("kind") == "session" else None
    if usage is not None:
        fill("model", usage.get("model"), "the latest usage event", usage["seq"])
    if ses is not None:
        fill("model", ses.get("model"), "the session event", ses["seq"])
        fill("environment.cwd", ses.get("cwd"), "the session event", ses["seq"])
    ins = facets.get("instructions")
    if ins is not None and isinstance(ins.get("value"), list):
        listed = [
            {"path": i.get("path"), "order": i.get("order", n)}
            for n, i in enumerate(ins["value"], 1)
            if isinstance(i, dict)
        ]
        fill("instructions", listed, "the instructions state", ins["seq"])
    mem = facets.get("memory")
    if mem is not None:
        fill("memory", mem.get("value"), "the memory state", mem["seq"])
    for name in SNAPSHOT_PARTS:
        if name not in parts and not any(p.startswith(name + ".") for p in parts):
            parts[name] = {"value": None, "known": False, "source": None, "seq": None}
    order = {n: i for i, n in enumerate(SNAPSHOT_PARTS)}
    ordered = dict(sorted(parts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    return {
        "path": str(session.directory or session.display),
        "session_id": ses.get("session_id") if ses else None,
        "agent": agent,
        "schema": schema if schema is not None else PROMPT_CONTEXT_SCHEMA,
        "snapshot_seq": snap["seq"] if snap else None,
        "parts": ordered,
        "unknown": [n for n, p in ordered.items() if not p["known"]],
    }
