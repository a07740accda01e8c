"""A subagent's compaction (docs/design.md#m12): its view compacted as a session of its own,
the result written to its parent's log. Apart from `subagents` because it forks: `fork`
reads subagents' views itself."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from .compact.pipeline import compact_session
from .errors import LockBusy, UsageError
from .fork import fork
from .session.store import Session, atomic_write, session_folder
from .subagents import subagent_session
from .view.fold import plan_file


def compact_agent(target: Any, agent: str, **options: Any) -> Any:
    """Compact subagent AGENT of the catty session TARGET: its view is compacted as a session of
    its own (a fork of it, in a private folder, through `compact_session`), then the compaction
    and its spend are appended to the parent's log with `agent` set and the seqs mapped back to
    the parent's, and its request artifact copied beside the parent's. The CompactResult, its
    `through_seq` and `event` the parent's."""
    if options.get("mode") == "segments":
        raise UsageError("compact --agent: segments mode is not supported for a subagent (summary or transcript)")
    parent = Session.open(target)
    directory = parent.require_directory("compact --agent")
    before = (plan_file(parent.log_path, agent=agent).compaction or {}).get("id")
    with tempfile.TemporaryDirectory(prefix="catty-ctx-agent-compact-") as work:
        child_dir = Path(work) / "s"
        with subagent_session(parent, agent) as sub:
            seqs = list(sub.origin["seqs"]) if sub.origin else []
            parent_id = sub.origin.get("parent_session_id") if sub.origin else None
        fork(str(parent.directory), str(child_dir), agent=agent)
        with Session.open(child_dir) as child:
            result = compact_session(child, **options)
            result.path, result.session_id = str(directory), parent_id
            if result.event is None:
                return result  # below the threshold, or a dry run: nothing to carry back
            written = [ev for ev in child.events(warn=None) if ev["seq"] > len(seqs) and ev["kind"] in ("usage", "compaction")]

        def parent_seq(seq: Any) -> Any:
            return seqs[min(seq, len(seqs)) - 1] if type(seq) is int and seq > 0 and seqs else seq

        back = []
        for ev in written:
            ev = {k: v for k, v in ev.items() if k not in ("v", "seq")}
            for key in ("through_seq", "from_seq"):
                if key in ev:
                    ev[key] = parent_seq(ev[key])
            back.append({**ev, "agent": agent})
        artifact = child_dir / str(result.event.get("artifact") or "")
        with parent.lock(options.get("lock_timeout", 30.0)):
            if (plan_file(parent.log_path, agent=agent).compaction or {}).get("id") != before:
                raise LockBusy(f"{parent.display}: another compaction of subagent {agent} landed while this one ran; run compact again")
            if result.event.get("artifact") and artifact.is_file():  # the side file first, the event last
                session_folder(directory / artifact.relative_to(child_dir).parent)  # never a link out of the session
                atomic_write(directory / artifact.relative_to(child_dir), artifact.read_bytes())
            out = parent.append_locked(back, warn=None)
    result.through_seq = out[-1].get("through_seq")
    result.event = out[-1]
    return result
