"""Our entries in an agent's own settings files: added by `hook install`, removed by `hook uninstall`.

The user's file is theirs: every key and hook they have stays where it is, in order; ours are
appended (a matcher group of their own per event, so no user group is ever edited); a run that
finds them already there changes nothing (the bytes stay as they are); the previous bytes are
kept beside the file (`NAME.catty-ctx.bak`) before it is replaced atomically; a file that is not
plain JSON (comments, trailing commas, duplicate keys) or not an object is refused with one line,
and so is a symbolic link (the rename would replace the link, not its target). Uninstall removes
exactly the entries install writes (recognised by their command) and the containers that only
held them.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import stat
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError, UsageError
from ..session.files import replace_file

SCOPES = ("user", "project", "local")
RECALL_SERVER = "catty-recall"
BACKUP_SUFFIX = ".catty-ctx.bak"
HOOK_TIMEOUT = 30  # seconds the agent waits for our hook; the hook's own --deadline is shorter
DEFAULT_COMMAND = "catty-ctx"
# Claude Code's hook points and what runs at each: PreCompact for both triggers, SessionStart
# only for the sources that follow a compaction or a resume (startup and clear have nothing to add).
CLAUDE_HOOKS = (("PreCompact", None, "pre-compact"), ("SessionStart", "compact|resume", "session-start"))
_OURS = re.compile(r"catty[-_]ctx\b.*\bhook (claude|codex) (pre-compact|session-start)\b")
_OUR_STATUSLINE = re.compile(r"catty[-_]ctx\b.*\bstatusline\b")


@dataclass
class Change:
    """One file's rewrite: its bytes before (None: no such file) and after, and what changed."""

    path: Path
    before: bytes | None
    after: bytes
    what: list[str]

    def diff(self) -> str:
        old = (self.before or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = self.after.decode("utf-8", "replace").splitlines(keepends=True)
        label = str(self.path)
        return "".join(difflib.unified_diff(old, new, f"{label} (now)", f"{label} (after)"))


# -- reading and writing the user's JSON --------------------------------------------------


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_json_object(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    """PATH's bytes (None when there is no such file) and the object they hold ({} for none or
    an empty file). Anything but a regular file holding one plain JSON object is a DataError."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None, {}
    if stat.S_ISLNK(st.st_mode):
        raise DataError("is a symbolic link: left unchanged (give its target with --settings)", path=str(path))
    if not stat.S_ISREG(st.st_mode):
        raise DataError("is not a regular file: left unchanged", path=str(path))
    data = path.read_bytes()
    if not data.strip():
        return data, {}
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_constant)
    except UnicodeDecodeError:
        raise DataError("is not UTF-8 text: left unchanged", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"not plain JSON ({exc.msg}; comments are not JSON): left unchanged", path=str(path), line=exc.lineno) from None
    except ValueError as exc:
        raise DataError(f"not plain JSON ({exc}): left unchanged", path=str(path)) from None
    if not isinstance(doc, dict):
        raise DataError("does not hold a JSON object: left unchanged", path=str(path))
    return data, doc


def json_text(doc: dict[str, Any]) -> bytes:
    """DOC as the agents write their settings: two-space indent, UTF-8, a final newline."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def apply(changes: list[Change]) -> None:
    """Write each change: the previous bytes to the backup first, then the file, each atomically."""
    for change in changes:
        change.path.parent.mkdir(parents=True, exist_ok=True)
        if change.before is not None:
            replace_file(backup_path(change.path), change.before)
        replace_file(change.path, change.after)


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def _change(path: Path, before: bytes | None, doc: dict[str, Any], new: dict[str, Any], what: list[str]) -> Change | None:
    """The rewrite of PATH from DOC to NEW, or None when nothing changes (its bytes stay as they are)."""
    return None if new == doc else Change(path, before, json_text(new), what)


# -- the commands we install ---------------------------------------------------------------


def command_words(command: str) -> list[str]:
    """The words of the catty-ctx command line to install (default `catty-ctx`)."""
    words = shlex.split(command)
    if not words:
        raise UsageError("--command: an empty command line")
    return words


def hook_command(command: str, agent: str, hook: str) -> str:
    return f"{command} hook {agent} {hook}"


def is_our_hook(handler: Any) -> bool:
    return isinstance(handler, dict) and isinstance(handler.get("command"), str) and _OURS.search(handler["command"]) is not None


def is_our_statusline(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("command"), str) and _OUR_STATUSLINE.search(value["command"]) is not None


def add_hooks(doc: dict[str, Any], entries: list[tuple[str, str | None, str]], where: str) -> tuple[dict[str, Any], list[str]]:
    """DOC with a group (ENTRIES: event, matcher or None, command) appended to each event
    that holds none of ours yet; and the events added. WHERE names the file in errors."""
    new = deepcopy(doc)
    hooks = new.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise DataError('"hooks" is not an object: left unchanged', path=where)
    added: list[str] = []
    for event, matcher, command in entries:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise DataError(f'"hooks.{event}" is not a list: left unchanged', path=where)
        if any(is_our_hook(h) for g in groups if isinstance(g, dict) for h in (g.get("hooks") or []) if isinstance(g.get("hooks"), list)):
            continue
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]
        groups.append(group)
        added.append(event)
    if not added and "hooks" not in doc:
        del new["hooks"]
    return new, added


def remove_hooks(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """DOC without our hook handlers, nor the groups, event lists and `hooks` object that held
    only them; and the events they were removed from."""
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return doc, []
    new = deepcopy(doc)
    removed: list[str] = []
    for event in list(new["hooks"]):
        groups = new["hooks"][event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(is_our_hook(h) for h in handlers):
                kept_groups.append(group)
                continue
            if event not in removed:
                removed.append(event)
            rest = [h for h in handlers if not is_our_hook(h)]
            if rest:
                kept_groups.append({**group, "hooks": rest})
        if event in removed:
            if kept_groups:
                new["hooks"][event] = kept_groups
            else:
                del new["hooks"][event]
    if removed and not new["hooks"]:
        del new["hooks"]
    return new, removed


# -- Claude Code ---------------------------------------------------------------------------


def codex_home(given: str | None = None) -> Path:
    """Codex's home: GIVEN, else CODEX_HOME, else ~/.codex."""
    if given:
        return Path(given)
    if os.environ.get("CODEX_HOME"):
        return Path(os.environ["CODEX_HOME"])
    return Path.home() / ".codex"


def claude_config_dir() -> Path:
    """Claude Code's configuration folder: CLAUDE_CONFIG_DIR, else ~/.claude."""
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(given) if given else Path.home() / ".claude"


def claude_settings_path(scope: str, settings: str | None, cwd: Path) -> Path:
    if settings is not None:
        return Path(settings)
    if scope == "user":
        return claude_config_dir() / "settings.json"
    if scope == "project":
        return cwd / ".claude" / "settings.json"
    if scope == "local":
        return cwd / ".claude" / "settings.local.json"
    raise UsageError(f"--scope: one of {', '.join(SCOPES)}, not {scope!r}")


def claude_mcp_path(scope: str) -> Path:
    """Where Claude Code reads MCP servers of SCOPE: the project's `.mcp.json`, else its global
    config file (`~/.claude.json`; in CLAUDE_CONFIG_DIR when that is set)."""
    if scope == "project":
        return Path.cwd() / ".mcp.json"
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(given) / ".claude.json" if given else Path.home() / ".claude.json"


def mcp_entry(command: str) -> dict[str, Any]:
    words = command_words(command)
    return {"type": "stdio", "command": words[0], "args": [*words[1:], "mcp"]}


def _is_our_server(value: Any) -> bool:
    return isinstance(value, dict) and "mcp" in (value.get("args") or []) and re.search(r"catty[-_]ctx", " ".join(
        [str(value.get("command", "")), *map(str, value.get("args") or [])])) is not None


def _servers_holder(doc: dict[str, Any], scope: str, cwd: Path, where: str, create: bool) -> dict[str, Any] | None:
    """The object of DOC whose `mcpServers` SCOPE uses (for local scope: the project's entry of
    the global config file), or None when it is absent and CREATE is false."""
    if scope != "local":
        return doc
    projects = doc.get("projects")
    if projects is None and create:
        projects = doc["projects"] = {}
    if projects is None:
        return None
    if not isinstance(projects, dict):
        raise DataError('"projects" is not an object: left unchanged', path=where)
    key = str(cwd)
    if key not in projects and create:
        projects[key] = {}
    holder = projects.get(key)
    if holder is None:
        return None
    if not isinstance(holder, dict):
        raise DataError(f'"projects.{key}" is not an object: left unchanged', path=where)
    return holder


def add_server(doc: dict[str, Any], scope: str, cwd: Path, command: str, where: str) -> tuple[dict[str, Any], list[str]]:
    new = deepcopy(doc)
    holder = _servers_holder(new, scope, cwd, where, create=True)
    assert holder is not None
    servers = holder.get("mcpServers")
    if servers is None:
        servers = holder["mcpServers"] = {}
    if not isinstance(servers, dict):
        raise DataError('"mcpServers" is not an object: left unchanged', path=where)
    if RECALL_SERVER in servers:
        if _is_our_server(servers[RECALL_SERVER]):
            return doc, []
        raise DataError(f'an MCP server named "{RECALL_SERVER}" that is not ours: left unchanged', path=where)
    servers[RECALL_SERVER] = mcp_entry(command)
    return new, [f"mcpServers.{RECALL_SERVER}"]


def remove_server(doc: dict[str, Any], scope: str, cwd: Path, where: str) -> tuple[dict[str, Any], list[str]]:
    new = deepcopy(doc)
    holder = _servers_holder(new, scope, cwd, where, create=False)
    servers = None if holder is None else holder.get("mcpServers")
    if not isinstance(servers, dict) or not _is_our_server(servers.get(RECALL_SERVER)):
        return doc, []
    del servers[RECALL_SERVER]
    if not servers and holder is not None:
        del holder["mcpServers"]
    return new, [f"mcpServers.{RECALL_SERVER}"]


def add_statusline(doc: dict[str, Any], command: str, where: str) -> tuple[dict[str, Any], list[str]]:
    current = doc.get("statusLine")
    if current is not None:
        if is_our_statusline(current):
            return doc, []
        raise DataError('"statusLine" is set to a command of the user\'s own: left unchanged (remove it first, or leave out --statusline)',
                        path=where)
    new = deepcopy(doc)
    new["statusLine"] = {"type": "command", "command": f"{command} statusline", "padding": 0}
    return new, ["statusLine"]


def remove_statusline(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    if not is_our_statusline(doc.get("statusLine")):
        return doc, []
    new = deepcopy(doc)
    del new["statusLine"]
    return new, ["statusLine"]


def plan_claude(install: bool, *, scope: str = "user", settings: str | None = None, statusline: bool = False,
                mcp: bool = False, command: str = DEFAULT_COMMAND, cwd: Path | None = None, hooks: bool = True) -> list[Change]:
    """The file changes `hook install claude` (INSTALL) or `hook uninstall claude` makes (without
    HOOKS, install adds no hooks: the plugin's run).

    Uninstall removes every entry of ours it finds in the settings file (hooks, status line) and
    our MCP server from the file of SCOPE where install puts it (a file it cannot read there is
    an error only with MCP).
    """
    here = (cwd or Path.cwd()).resolve()
    command_words(command)
    path = claude_settings_path(scope, settings, here)
    before, doc = read_json_object(path)
    where = str(path)
    what: list[str]
    if install:
        entries = [(event, matcher, hook_command(command, "claude", hook)) for event, matcher, hook in CLAUDE_HOOKS]
        new, added = add_hooks(doc, entries, where) if hooks else (doc, [])
        what = [f"hooks.{e}" for e in added]
        if statusline:
            new, more = add_statusline(new, command, where)
            what += more
    else:
        new, removed = remove_hooks(doc)
        new, more = remove_statusline(new)
        what = [f"hooks.{e}" for e in removed] + more
    changes = [c for c in [_change(path, before, doc, new, what)] if c is not None]
    if mcp or not install:
        mpath = claude_mcp_path(scope)
        try:
            mbefore, mdoc = read_json_object(mpath)
        except DataError:
            if mcp:
                raise
            return changes
        if install:
            mnew, mwhat = add_server(mdoc, scope, here, command, str(mpath))
        else:
            mnew, mwhat = remove_server(mdoc, scope, here, str(mpath))
        changes += [c for c in [_change(mpath, mbefore, mdoc, mnew, mwhat)] if c is not None]
    return changes
