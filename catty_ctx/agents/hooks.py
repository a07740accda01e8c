"""The hook commands an agent runs: PreCompact brings the mirror up to date and archives the span
since the previous compaction, SessionStart prints the continuation reminder after a compaction
or a resume. The agent is a parameter throughout (`claude`, `codex`): its name picks the mirrors
subfolder, its format the importer.

Fail-open (docs/agents.md): a hook never blocks or fails the agent. Every error becomes one
line on stderr and one in the mirror root's `hooks.log`, and the command exits 0 within its
deadline (an alarm ends a run that overstays it).

The mirror (`mirror.sync`) is a catty session under the mirrors folder, `AGENT/<session_id>/`,
grown by the bytes the transcript gained since the last hook; nothing is ever taken out of it,
so a later rewrite, truncation or deletion of the transcript leaves it whole. A session id
comes from the hook's JSON: it must look like an id before it names a folder.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .plugin import PLUGIN, installed_instead
from .settings import RECALL_SERVER

REMINDER_LIMIT = 10_000
RECALL_TOOL = f"mcp__{RECALL_SERVER}__recall_search"  # how Claude Code names the recall server's search tool
# How each agent shows that tool to its model (Codex: the tool's own name in a namespace named
# after the server, its '-' made '_').
RECALL_TOOLS = {"claude": RECALL_TOOL, "codex": f"recall_search (namespace mcp__{RECALL_SERVER.replace('-', '_')})"}
# The same tool as the plugin's server (plugins/catty-ctx/.mcp.json) shows it.
# (Claude Code names a plugin's server plugin_<plugin>_<server>.)
PLUGIN_RECALL_TOOLS = {"claude": f"mcp__plugin_{PLUGIN}_{RECALL_SERVER}__recall_search", "codex": RECALL_TOOLS["codex"]}
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_LOCK_SHARE = 0.5  # of the deadline, at most, spent waiting for another hook's lock on the mirror
_READ_SHARE = 0.6  # of the deadline, past which no new step of reading the transcript starts


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


def _text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def update_mirror(payload: dict[str, Any], root: Path, agent: str, fmt: str, *, archive: bool = False,
                  lock_timeout: float = 5.0, budget: float | None = None) -> Path:
    """Bring the mirror of the session the hook names up to date (with ARCHIVE, also archive the
    span since the previous compaction as a segment). Warnings go to stderr and the log."""
    from .mirror import sync

    sid = session_id_of(payload)
    transcript = _text(payload, "transcript_path")
    dest = mirror_dir(root, agent, sid)
    if transcript is None and not (dest / "updates.jsonl").exists():
        raise HookFailure("the hook's JSON names no transcript_path")
    dest.parent.mkdir(parents=True, exist_ok=True)
    made = not dest.exists()
    try:
        report = sync(dest, transcript, fmt, sid, archive=archive, trigger=_text(payload, "trigger"), cwd=_text(payload, "cwd"),
                      lock_timeout=lock_timeout, budget=budget)
    except BaseException:
        if made:
            _remove_empty(dest)
        raise
    if made and not (dest / "updates.jsonl").exists():
        _remove_empty(dest)
    if report.warning:
        warn(root, f"hook {agent}: {report.warning}")
    return dest


def _remove_empty(folder: Path) -> None:
    """A mirror folder this run made and left without a log (only its lock file): removed."""
    try:
        for name in os.listdir(folder):
            if name.endswith(".lock"):
                os.unlink(folder / name)
        folder.rmdir()
    except OSError:
        pass


def reminder(folder: Path, agent: str, plugin: bool = False) -> str:
    """The continuation reminder built from the mirror in FOLDER, at most REMINDER_LIMIT characters,
    ending with how to recover exact details (the recall tool, the `segment grep` line)."""
    from . import continuation, mirror

    body = continuation.render(mirror.load_state(folder))
    tail = (f"To recover an exact detail of the earlier conversation (an error message, a command's output, "
            f"a file's content), call the tool {(PLUGIN_RECALL_TOOLS if plugin else RECALL_TOOLS).get(agent, RECALL_TOOL)} with a pattern when it is available, or run:\n"
            f"catty-ctx segment grep {shlex.quote(str(folder))} 'PATTERN'")
    room = REMINDER_LIMIT - len(tail)
    if len(body) > room:
        body = body[: room - 2] + "…\n"
    return body + tail


def warn(root: Path, line: str) -> None:
    """One line on stderr and in the hooks log; the hook goes on."""
    line = " ".join(line.split())
    sys.stderr.write(f"catty-ctx: warning: {line}\n")
    log_line(root, line)


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


def left_to_install(agent: str, hook: str, payload: dict[str, Any], root: Path) -> bool:
    """For the plugin's hook: True (and a line in the log) when `hook install`'s entries are in
    the agent's settings, which then run this hook instead (docs/agents.md#the-plugin)."""
    found = installed_instead(agent, payload)
    if found is not None:
        log_line(root, f"hook {agent} {hook} --plugin: left to the hooks `hook install` wrote in {found}")
    return found is not None


def pre_compact(agent: str, fmt: str, stdin: Any, root: Path, deadline: float = 10.0, plugin: bool = False) -> None:
    payload = read_payload(stdin)
    if plugin and left_to_install(agent, "pre-compact", payload, root):
        return
    update_mirror(payload, root, agent, fmt, archive=True, lock_timeout=deadline * _LOCK_SHARE, budget=deadline * _READ_SHARE)


def session_start(agent: str, fmt: str, stdin: Any, stdout: Any, root: Path, deadline: float = 10.0, plugin: bool = False) -> None:
    payload = read_payload(stdin)
    if payload.get("source") not in ("compact", "resume"):
        return
    if plugin and left_to_install(agent, "session-start", payload, root):
        return
    sid = session_id_of(payload)
    mirror = mirror_dir(root, agent, sid)
    try:  # the compaction's own records (or a resumed session's), read before the reminder
        update_mirror(payload, root, agent, fmt, lock_timeout=deadline * _LOCK_SHARE, budget=deadline * _READ_SHARE)
    except Exception as exc:
        if not (mirror / "updates.jsonl").exists():
            raise
        warn(root, f"hook {agent} session-start: {exc}")
    if not (mirror / "updates.jsonl").exists():
        raise HookFailure(f"no mirror of session {sid} yet")
    text = reminder(mirror, agent, plugin)
    stdout.write(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}) + "\n")
