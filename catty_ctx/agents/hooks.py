"""The hook commands an agent runs: PreCompact brings the mirror up to date, SessionStart prints
the continuation reminder after a compaction or a resume.

Fail-open (docs/agents.md): a hook never blocks or fails the agent. Every error becomes one
line on stderr and one in the mirror root's `hooks.log`, and the command exits 0 within its
deadline (an alarm ends a run that overstays it).

The mirror is a catty session under the mirrors folder, `claude/<session_id>/`, re-imported
from the transcript at each PreCompact into a new folder that then replaces the previous one,
so a later rewrite, truncation or deletion of the transcript leaves the last good mirror in
place. A session id comes from the hook's JSON: it must look like an id before it names a folder.
"""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..files import replace_folder

REMINDER_LIMIT = 10_000
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class HookFailure(Exception):
    """What stopped a hook, said in one line."""


def mirrors_root(given: str | None = None) -> Path:
    """The mirrors folder: GIVEN, else CATTY_CTX_MIRRORS, else $XDG_DATA_HOME/catty-ctx/mirrors."""
    if given:
        return Path(given)
    if os.environ.get("CATTY_CTX_MIRRORS"):
        return Path(os.environ["CATTY_CTX_MIRRORS"])
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "catty-ctx" / "mirrors"


def session_id_of(payload: dict[str, Any]) -> str:
    sid = payload.get("session_id")
    if not isinstance(sid, str) or _SESSION_ID.match(sid) is None or sid in (".", ".."):
        raise HookFailure("the hook's session_id is missing or not an id (letters, digits, . _ -)")
    return sid


def mirror_dir(root: Path, agent: str, sid: str) -> Path:
    return root / agent / sid


def read_payload(stdin: Any) -> dict[str, Any]:
    data = stdin.read()
    try:
        payload = json.loads(data or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise HookFailure("the hook's JSON on stdin is not JSON") from None
    if not isinstance(payload, dict):
        raise HookFailure("the hook's JSON on stdin is not an object")
    return payload


def update_mirror(payload: dict[str, Any], root: Path, agent: str, fmt: str) -> Path:
    """Import the transcript the hook names into the mirror (a new folder swapped in)."""
    # start-up: the importers load only when a hook has a transcript to read
    from ..importers import import_to_dir

    sid = session_id_of(payload)
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        raise HookFailure("the hook's JSON names no transcript_path")
    dest = mirror_dir(root, agent, sid)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fresh = dest.parent / f".{sid}.new.{os.getpid()}"
    import_to_dir(fmt, transcript, fresh, lenient=True, warn=lambda _m: None, session_id=sid)
    replace_folder(fresh, dest)
    return dest


def reminder(mirror: Path, agent: str) -> str:
    """The continuation reminder built from the mirror's events, at most REMINDER_LIMIT characters,
    ending with how to recover exact details."""
    # start-up: the library loads only when a hook has a mirror to read
    from ..head import HeadState, continuation_state, render_state
    from ..store import Session

    state = HeadState()
    with Session.open(str(mirror)) as session:
        for ev in session.events():
            state.track(ev)
    body = render_state(continuation_state(state))
    log = mirror / "updates.jsonl"
    tail = (f"\nThe earlier conversation is kept verbatim in {log}: find an exact detail with `grep -n 'TEXT' {log}`, "
            f"then print that event with `catty-ctx inspect {mirror} --seq N`.")
    room = REMINDER_LIMIT - len(tail)
    if len(body) > room:
        body = body[: room - 2] + "…\n"
    return body + tail


def log_line(root: Path, line: str) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        with open(root / "hooks.log", "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {line}\n")
    except OSError:
        pass


def fail_open(agent: str, hook: str, root: Path, deadline: float, work: Callable[[], None]) -> None:
    """Run WORK; any error (or overstaying DEADLINE seconds) is one stderr line and a log line."""

    def overstayed(_sig: int, _frame: Any) -> None:
        raise HookFailure(f"gave up after the deadline of {deadline:g} s")

    previous = signal.signal(signal.SIGALRM, overstayed)
    signal.setitimer(signal.ITIMER_REAL, deadline)
    try:
        work()
    except BaseException as exc:
        message = str(exc) if isinstance(exc, HookFailure) else f"{type(exc).__name__}: {exc}"
        line = f"hook {agent} {hook}: {' '.join(message.split())}"
        sys.stderr.write(f"catty-ctx: warning: {line}\n")
        log_line(root, line)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def pre_compact(agent: str, fmt: str, stdin: Any, root: Path) -> None:
    payload = read_payload(stdin)
    update_mirror(payload, root, agent, fmt)


def session_start(agent: str, fmt: str, stdin: Any, stdout: Any, root: Path) -> None:
    payload = read_payload(stdin)
    if payload.get("source") not in ("compact", "resume"):
        return
    sid = session_id_of(payload)
    mirror = mirror_dir(root, agent, sid)
    if not mirror.exists() and isinstance(payload.get("transcript_path"), str):
        mirror = update_mirror(payload, root, agent, fmt)  # a resume of a session never compacted here
    text = reminder(mirror, agent)
    stdout.write(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}) + "\n")
