"""Hooks for tests: a command that records what the agent hands its hooks (and may answer),
and the settings shape Claude Code (settings.json) and Codex (hooks.json) read."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import orjson

from .runner import read_jsonl

RECORDER = Path(__file__).with_name("hook_recorder.py")
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "Stop", "SessionEnd")


def recorder(log: Path, event: str, reply: dict[str, Any] | None = None) -> str:
    """The command line of a hook that appends its input to `log` (and prints `reply`)."""
    argv = [sys.executable, "-S", str(RECORDER), str(log), event]  # -S: the standard library is all it needs, site's start-up is not
    if reply is not None:
        argv.append(orjson.dumps(reply).decode())
    return shlex.join(argv)


def hooks_config(commands: dict[str, str | list[str]]) -> dict[str, Any]:
    """{"hooks": {EVENT: [{"matcher": "*", "hooks": [{"type": "command", "command": C}, ...]}]}}:
    the shape both agents read (Claude Code in settings.json, Codex in CODEX_HOME/hooks.json)."""
    hooks: dict[str, Any] = {}
    for event, cmds in commands.items():
        handlers = [{"type": "command", "command": c} for c in ([cmds] if isinstance(cmds, str) else cmds)]
        hooks[event] = [{"matcher": "*", "hooks": handlers}]
    return {"hooks": hooks}


def recording_hooks(log: Path, events: tuple[str, ...] = EVENTS, replies: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """A hooks config where every event in `events` is recorded into `log`; `replies` gives
    some events an answer (e.g. SessionStart's hookSpecificOutput.additionalContext)."""
    replies = replies or {}
    return hooks_config({e: recorder(log, e, replies.get(e)) for e in events})


def recorded(log: Path) -> list[dict[str, Any]]:
    """What the hooks were handed, in the order they ran."""
    return read_jsonl(log) if log.exists() else []


def context_reply(event: str, text: str) -> dict[str, Any]:
    """A SessionStart / UserPromptSubmit answer whose additionalContext enters the next request."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
