"""`eval --native ROOT`: what the agents' own compactions kept, and what our reminder adds.

For every compaction an agent recorded in its own session files under ROOT (Claude Code's
`compact_boundary` and summary, Codex's `compacted`, Grok Build's `compaction_checkpoint` with
its checkpoint's summary item), the facts of the span it summarised are
derived as `--facts auto` derives a session's (the user's constraints and the errors of the
span, the state as it stood: pending todos, files edited and not failed, running jobs) and
looked for in (a) the agent's summary alone and (b) that summary plus the continuation
reminder our hooks inject after it. The reminder is the hooks' own (`agents.hooks`): the
transcript is cut back to the line that records the compaction, as it stood when the agent's
PreCompact hook ran, `pre_compact` builds the mirror from it; then the agent's records of the
compaction are appended, as the agent appends them, and `session_start` (source `compact`)
prints the reminder. With (b), a `detail` fact also counts when the mirror the
reminder names holds it (the same rule as the eval's `detail_recovery`: an exact detail is
recovered on demand, not carried). The sources are only read; cuts and mirrors go to a
temporary folder, or to `--out`.
"""
from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.hooks import HookFailure, mirror_dir, pre_compact, session_start
from ..errors import CattyError, UsageError
from ..fleet.runner import RootRun
from ..session.compressed import decompress
from ..session.events import Event
from ..session.jsonl import raw_lines
from ..session.store import Session
from ..sources import import_session, native_source, root_sessions
from ..view.fold import plan_file
from .facts import KINDS, Fact, derive_facts
from .folders import work_folder
from .metrics import in_segments
from .verdict import Evaluation

AGENTS = {"claude": "claude", "codex": "codex", "grok": "grok"}  # formats whose compactions are cut at their line -> hook agent
_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]+")
COLUMNS = ("summary", "reminder")  # (a) and (b)


@dataclass
class Case:
    """One compaction an agent recorded, with what is needed to score it."""

    label: str  # the session as found under ROOT
    source: Path
    agent: str
    session_id: str
    number: int  # 1-based among the session's compactions
    compaction_id: str
    offset: int  # byte offset of the line that records the compaction
    end: int  # ... and the end of its summary's line
    seq_from: int
    through_seq: int
    summary: str
    facts: list[Fact]
    cwd: str | None = None


@dataclass
class Outcome:
    case: Case
    missed: dict[str, list[Fact]] = field(default_factory=dict)  # per column
    recovered: int = 0  # detail facts (b) counts only through the mirror
    reminder_chars: int = 0
    folder: Path | None = None  # where the cut transcript and its mirror are (kept with --out)
    error: str | None = None

    def kept(self, column: str) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        lost = self.missed.get(column, [])
        for f in self.case.facts:
            if f not in lost:
                out[f.kind] += 1
        return out


def _offsets(source: Path, wanted: list[Event], agent: str) -> dict[str, tuple[int, int]]:
    """Where each compaction of WANTED is recorded (by its id: Codex's `line-N`, Claude Code's
    boundary or summary uuid): the byte offset of its first line, and the end of the line that
    holds its summary (Claude Code writes the boundary, then the summary)."""
    ids = {str(ev["id"]) for ev in wanted}
    lines = {int(i[5:]) for i in ids if agent == "codex" and i.startswith("line-") and i[5:].isdigit()}
    needles = [i.encode() for i in ids]
    out: dict[str, tuple[int, int]] = {}
    open_boundary: str | None = None  # a boundary whose summary line is still to come
    with _opened(source) as f:
        for raw in raw_lines(f, str(source), warn=None):
            end = raw.offset + len(raw.data) + 1
            if agent == "codex":
                if raw.lineno in lines:
                    out[f"line-{raw.lineno}"] = (raw.offset, end)
                continue
            if agent == "grok":  # its compaction_checkpoint line, by the checkpoint's id
                if b"compaction_checkpoint" in raw.data and any(n in raw.data for n in needles):
                    update = _grok_update(raw.data)
                    cid = update.get("checkpoint_id")
                    if update.get("sessionUpdate") == "compaction_checkpoint" and cid in ids and cid not in out:
                        out[cid] = (raw.offset, end)
                continue
            if open_boundary is not None and b"isCompactSummary" in raw.data:
                out[open_boundary] = (out[open_boundary][0], end)
                open_boundary = None
            if any(n in raw.data for n in needles):
                try:
                    rec = json.loads(raw.data)
                except ValueError:
                    continue
                uid = rec.get("uuid") if isinstance(rec, dict) else None
                if uid in ids and uid not in out:
                    out[uid] = (raw.offset, end)
                    open_boundary = uid if rec.get("subtype") == "compact_boundary" else None
    return out


def _grok_update(data: bytes) -> dict[str, Any]:
    try:
        rec = json.loads(data)
    except ValueError:
        return {}
    params = rec.get("params") if isinstance(rec, dict) else None
    update = params.get("update") if isinstance(params, dict) else None
    return update if isinstance(update, dict) else {}


def _opened(source: Path) -> Any:
    """SOURCE as a binary file (a compressed rollout decompressed in memory)."""
    if source.name.endswith(".zst"):
        with open(source, "rb") as f:
            return io.BytesIO(decompress(f))
    return open(source, "rb")


def session_cases(native: Any, label: str) -> list[Case]:
    """The compactions of one native session, each with its span's facts."""
    agent = AGENTS.get(native.format)
    if agent is None:
        return []
    with import_session(native) as s:  # (a line it cannot read is skipped and named, as every reader of native files does)
        events = list(s.events(warn=None))
        plan = plan_file(s.log_path)
        origin = s.origin or {}
    main = [ev for ev in events if ev["kind"] == "compaction" and ev.get("agent") is None]
    if not main:
        return []
    offsets = _offsets(native.path, main, agent)
    sid = _SAFE_ID.sub("-", str(origin.get("session_id") or native.path.stem)).strip("-.")[:100] or "session"
    cases = []
    since = 0
    for n, comp in enumerate(main, 1):
        through = comp["through_seq"]
        span = [ev for ev in events if ev["seq"] <= through and ev["kind"] != "compaction"]
        facts = derive_facts(span, plan, since=since)
        where = offsets.get(str(comp["id"]), (-1, -1))  # (-1: its line was not found; scored as failed)
        cases.append(Case(label, native.path, agent, sid, n, str(comp["id"]), where[0], where[1], since, through,
                          comp.get("summary") or "", facts, origin.get("cwd")))
        since = through + 1
    return cases


def _cases_of(item: Any) -> list[Case]:
    return session_cases(native_source(item), str(item))


def find_cases(root: str, *, on_error: Callable[[Any, CattyError], None] | None = None) -> tuple[list[Case], RootRun]:
    """Every compaction an agent recorded under ROOT (a home, a folder or one session file), and
    the run that read its native sessions (a `RootRun`: one that cannot be read goes to
    ON_ERROR and is left out; without ON_ERROR it is raised)."""
    p = Path(root)
    if not p.exists():
        raise UsageError(f"{root}: no such file or directory")
    one = native_source(p) if p.is_file() else None
    found = [one] if one is not None else [f for f in root_sessions(p, allow_empty=True) if native_source(f) is not None]
    if p.is_file() and one is None:
        raise UsageError(f"{root}: not an agent's own session file (--native reads Claude Code, Codex and Grok Build sessions)")
    run = RootRun(_cases_of, found, on_error=on_error)
    return [case for cases in run for case in cases], run


def _cut(case: Case, folder: Path) -> Path:
    """The transcript as it stood when the agent's PreCompact hook ran: every line before the
    one that records the compaction, under the source's own name."""
    dest = folder / case.source.name.removesuffix(".zst")
    with _opened(case.source) as src, open(dest, "wb") as out:
        out.write(src.read(case.offset))  # (the import has held as much)
    return dest


def _append_compaction(case: Case, transcript: Path) -> None:
    """The agent's own records of the compaction (boundary, summary), appended as the agent
    appends them before its SessionStart hook runs."""
    with _opened(case.source) as src, open(transcript, "ab") as out:
        src.seek(case.offset)
        out.write(src.read(case.end - case.offset))


def our_reminder(case: Case, folder: Path) -> tuple[str, Path]:
    """The reminder our SessionStart hook gives after this compaction, and the mirror it names:
    PreCompact on the transcript cut before the compaction, SessionStart (source `compact`)
    once the agent's records of it follow."""
    transcript = _cut(case, folder)
    root = folder / "mirrors"
    pre = {"session_id": case.session_id, "transcript_path": str(transcript), "cwd": case.cwd or str(folder),
           "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}
    pre_compact(case.agent, case.agent, io.BytesIO(json.dumps(pre).encode()), root)
    _append_compaction(case, transcript)
    start = {"session_id": case.session_id, "transcript_path": str(transcript), "cwd": case.cwd or str(folder),
             "hook_event_name": "SessionStart", "source": "compact"}
    out = io.StringIO()
    session_start(case.agent, case.agent, io.BytesIO(json.dumps(start).encode()), out, root)
    printed = out.getvalue()
    if not printed.strip():
        raise UsageError("the SessionStart hook printed no reminder")
    context = json.loads(printed)["hookSpecificOutput"]["additionalContext"]
    return context, mirror_dir(root, case.agent, case.session_id)


def _in_mirror(mirror: Path, text: str) -> bool:
    """Whether the mirror holds TEXT: its segments (`segment grep`), else an event's own text."""
    if (mirror / "segments").is_dir() and in_segments(mirror, text):
        return True
    with Session.open(str(mirror)) as s:
        for ev in s.events(warn=None):
            for key in ("text", "output"):
                value = ev.get(key)
                if isinstance(value, str) and text in value:
                    return True
    return False


def score(case: Case, work: Path, *, kept: bool = False) -> Outcome:
    """Both columns for one compaction; a failure of the hooks is this compaction's error (naming
    the cut transcript where it stays, under --out: KEPT)."""
    folder = work / f"{_SAFE_ID.sub('_', case.session_id)[:60]}-{case.number}"
    folder.mkdir(parents=True, exist_ok=True)
    outcome = Outcome(case, folder=folder)
    outcome.missed["summary"] = [f for f in case.facts if f.text not in case.summary]
    if case.offset < 0:
        outcome.error = f"{case.label}: compaction {case.number}: the line that records it ({case.compaction_id}) was not found"
        return outcome
    if case.offset == 0:  # the file opens with the compaction: no span before it, no hook to run
        outcome.missed["reminder"] = list(outcome.missed["summary"])
        return outcome
    try:
        reminder, mirror = our_reminder(case, folder)
        outcome.reminder_chars = len(reminder)
        both = case.summary + "\n" + reminder
        missed = []
        for f in case.facts:
            if f.text in both:
                continue
            if f.kind == "detail" and _in_mirror(mirror, f.text):
                outcome.recovered += 1
                continue
            missed.append(f)
        outcome.missed["reminder"] = missed
    except (CattyError, OSError, ValueError, KeyError, TypeError, HookFailure) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        if not kept:  # the cut is removed with the temporary folder: say what it was
            message = message.replace(str(folder / case.source.name.removesuffix(".zst")), "the transcript cut at the compaction")
        outcome.error = f"{case.label}: compaction {case.number}: {message}"
    return outcome


def _recall(kept: int, total: int) -> float | None:
    return round(kept / total, 4) if total else None


def _row(outcomes: list[Outcome]) -> dict[str, Any]:
    """The pooled figures of OUTCOMES (counts summed before any fraction)."""
    facts = dict.fromkeys(KINDS, 0)
    kept = {c: dict.fromkeys(KINDS, 0) for c in COLUMNS}
    for o in outcomes:
        if o.error:
            continue
        for f in o.case.facts:
            facts[f.kind] += 1
        for c in COLUMNS:
            for k, v in o.kept(c).items():
                kept[c][k] += v
    total = sum(facts.values())
    return {
        "facts": total,
        "summary_recall": _recall(sum(kept["summary"].values()), total),
        "reminder_recall": _recall(sum(kept["reminder"].values()), total),
        "by_kind": {k: {"facts": facts[k], "summary": kept["summary"][k], "reminder": kept["reminder"][k]} for k in KINDS},
        "recovered": sum(o.recovered for o in outcomes if not o.error),
    }


def run_native(root: str, *, out: str | None = None,
               progress: Callable[[Iterator[Any], int], Iterator[Any]] | None = None) -> dict[str, Any]:
    """The `eval --native --json` document: one entry per compaction, and the total (a native
    session that cannot be read raises: `evaluate_native` reports it and goes on)."""
    report = evaluate_native(root, out=out, progress=progress).report
    assert report is not None  # (without a reporter, a session that cannot be read raised)
    return report


def evaluate_native(root: str, *, out: str | None = None, progress: Callable[[Iterator[Any], int], Iterator[Any]] | None = None,
                    on_error: Callable[[Any, CattyError], None] | None = None) -> Evaluation:
    """`run_native`'s document with the run over ROOT's sessions: one that cannot be read goes to
    ON_ERROR and is left out; the exit by the rule of a ROOT (`Evaluation.exit_code`)."""
    cases, sessions = find_cases(root, on_error=on_error)
    if not cases:
        if sessions.errors:  # (what was found could not be read: nothing to score)
            return Evaluation(None, sessions)
        raise UsageError(f"{root}: no compaction recorded by Claude Code or Codex ({len(sessions.sessions)} of their sessions read)")
    doc = _scored(root, cases, out, progress)
    return Evaluation(doc, sessions, failed=bool(doc["native"]["total"]["failed"]), shortfall=native_below)


def _scored(root: str, cases: list[Case], out: str | None, progress: Callable[[Iterator[Any], int], Iterator[Any]] | None) -> dict[str, Any]:
    work, temporary = work_folder(out)
    try:
        scored = (score(c, work, kept=not temporary) for c in cases)
        outcomes = list(progress(scored, len(cases)) if progress else scored)
    finally:
        if temporary:
            shutil.rmtree(work, ignore_errors=True)
    entries = []
    for o in outcomes:
        c = o.case
        # The same keys for every entry (docs/json.md): a failed one has nulls where a score would be.
        entry: dict[str, Any] = {"session": c.label, "agent": c.agent, "compaction": c.number, "id": c.compaction_id,
                                 "seq_from": c.seq_from, "through_seq": c.through_seq, "facts": len(c.facts),
                                 "summary_recall": None, "reminder_recall": None, "by_kind": None, "recovered": None,
                                 "reminder_chars": None, "derived": [f.as_dict() for f in c.facts], "missed": None,
                                 "folder": None if temporary else str(o.folder), "error": o.error}
        if not o.error:
            entry.update(_row([o]), reminder_chars=o.reminder_chars,
                         missed={col: [f.as_dict() for f in o.missed[col]] for col in COLUMNS})
        entries.append(entry)
    total = _row(outcomes)
    total.update(sessions=len({c.label for c in cases}), compactions=len(cases), failed=sum(1 for o in outcomes if o.error))
    return {"native": {"root": root, "compactions": entries, "total": total}}


def native_below(report: dict[str, Any], minimum: float) -> list[str]:
    """What falls under --min-recall: failed compactions, and the total with our reminder."""
    doc = report["native"]
    out = [e["error"] for e in doc["compactions"] if e.get("error")]
    value = doc["total"]["reminder_recall"]
    if value is not None and value < minimum:
        out.append(f"recall with the reminder {value} < {minimum}")
    return out
