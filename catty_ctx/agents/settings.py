"""Our entries in an agent's own settings files: added by `hook install`, removed by `hook uninstall`.

The user's file is theirs: every key and hook they have stays where it is, in order; ours are
appended (a matcher group of their own per event, so no user group is ever edited); a run that
finds them already there changes nothing (the bytes stay as they are); only the bytes of our
entries change (`jsonsplice`: your layout, key order, escapes and final newline stay, and an
uninstall after an install gives the first bytes back); the previous bytes are
kept beside the file (`NAME.catty-ctx.bak`) before it is replaced atomically; a file that is not
plain JSON (comments, trailing commas, duplicate keys) or not an object is refused with one line,
and so is a symbolic link (the rename would replace the link, not its target). Uninstall removes
exactly the entries install writes (recognised by their command) and the containers that only
held them.
"""
from __future__ import annotations

import difflib
import fcntl
import json
import os
import re
import shlex
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError, UsageError
from ..session.files import clear_dead_temps, replace_file
from .jsonsplice import edited

SCOPES = ("user", "project", "local")
RECALL_SERVER = "catty-recall"
BACKUP_SUFFIX = ".catty-ctx.bak"
HOOK_TIMEOUT = 30  # seconds the agent waits for our hook; the hook's own --deadline is shorter
DEFAULT_COMMAND = "catty-ctx"
# Claude Code's hook points and what runs at each: PreCompact for both triggers, SessionStart
# only for the sources that follow a compaction or a resume (startup and clear have nothing to add).
CLAUDE_HOOKS = (("PreCompact", None, "pre-compact"), ("SessionStart", "compact|resume", "session-start"))
# A handler is ours when its command is exactly what install writes: a plain command line that
# runs catty-ctx (no shell operator, no word after ours), ending with our subcommand words.
_CATTY = re.compile(r"(?:^|/)catty[-_]ctx\Z")
_SHELL = re.compile(r"[;&|<>`()\n]|\$\(")
OUR_HOOK_TAILS = tuple(("hook", agent, hook) for agent in ("claude", "codex") for hook in ("pre-compact", "session-start"))
_HANDLER_KEYS = frozenset({"type", "command", "timeout", "additionalContextLimit"})
SAFE_INTEGER = 2 ** 53 - 1  # the largest integer every JSON reader (JavaScript's) holds exactly


@dataclass
class Change:
    """One file's rewrite: its bytes before (None: no such file) and after, and what changed."""

    path: Path
    before: bytes | None
    after: bytes
    what: list[str]
    remove: bool = False  # an uninstall left the file an empty object: it goes (its bytes before kept in the backup)

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


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is beyond what JSON readers hold (it would be rewritten as Infinity)")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 16 or abs(int(text)) > SAFE_INTEGER:
        raise ValueError(f"the integer {text[:40]} is beyond JSON's safe range (±2^53-1; its readers would round it)")
    return int(text)


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
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except RecursionError:
        raise DataError("nested too deeply to edit safely: left unchanged", path=str(path)) from None
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
    """DOC as the agents write their settings: two-space indent, UTF-8, a final newline. A lone
    surrogate (read from a `\\udXXX` escape) is written back as that escape."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


def json_bytes(before: bytes | None, doc: dict[str, Any], new: dict[str, Any]) -> bytes:
    """NEW as the bytes of the file that held DOC as BEFORE: the changed entries spliced in or cut
    out, every other byte as it was (its layout, key order, escapes, final newline); the whole
    document (`json_text`) for a new or empty file, or a change `jsonsplice` does not make in place."""
    text = before.decode("utf-8") if before is not None and before.strip() else None
    spliced = edited(text, doc, new) if text is not None else None
    return spliced.encode("utf-8", "backslashreplace") if spliced is not None else json_text(new)


def apply(changes: list[Change]) -> None:
    """Write each change: the previous bytes to the backup first (with the file's own mode: a
    0600 settings file may hold keys), then the file, each atomically. A file whose bytes are no
    longer those the change was planned from (another writer came between) is left unchanged."""
    for change in changes:
        change.path.parent.mkdir(parents=True, exist_ok=True)
        now = _current(change.path)
        if now != change.before:
            raise DataError("changed while it was being edited: left unchanged (run the command again)", path=str(change.path))
        clear_dead_temps(change.path.parent, of=(change.path.name, backup_path(change.path).name))  # a killed install's
        if change.before is not None:
            mode = stat.S_IMODE(os.stat(change.path, follow_symlinks=False).st_mode)
            replace_file(backup_path(change.path), change.before, mode=mode)
        if change.remove:
            change.path.unlink(missing_ok=True)
        else:
            replace_file(change.path, change.after)


def _current(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def no_link_below(anchor: Path, path: Path) -> None:
    """Refuse PATH when a folder between ANCHOR (the scope's base, taken as given) and it is a
    symbolic link: a write there would land outside the place the user named."""
    try:
        rest = path.relative_to(anchor).parts[:-1]
    except ValueError:
        return
    here = anchor
    for part in rest:
        here = here / part
        if here.is_symlink():
            raise DataError(f"{here} is a symbolic link: left unchanged (name the real folder)", path=str(path))


@contextmanager
def locked(paths: list[Path]) -> Iterator[None]:
    """Hold an advisory lock on the folder of each of PATHS (the nearest one that exists) while
    a read-change-replace runs, so two installs at once never lose one's change. Nothing is
    written for it: the lock is on the folder itself."""
    folders = sorted({_existing(p.parent) for p in paths})
    fds: list[int] = []
    try:
        for folder in folders:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in fds:
            os.close(fd)


def _existing(folder: Path) -> Path:
    folder = folder.absolute()
    while not folder.is_dir() and folder.parent != folder:
        folder = folder.parent
    return folder


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def _change(path: Path, before: bytes | None, doc: dict[str, Any], new: dict[str, Any], what: list[str],
            remove: bool = False) -> Change | None:
    """The rewrite of PATH from DOC to NEW, or None when nothing changes (its bytes stay as they are);
    with REMOVE, a NEW that is an empty object removes the file."""
    if new == doc:
        return None
    return Change(path, before, json_bytes(before, doc, new), what, remove=remove and not new)


# -- the commands we install ---------------------------------------------------------------


def command_words(command: str) -> list[str]:
    """The words of the catty-ctx command line to install (default `catty-ctx`)."""
    words = shlex.split(command)
    if not words:
        raise UsageError("--command: an empty command line")
    return words


def hook_command(command: str, agent: str, hook: str) -> str:
    return f"{command} hook {agent} {hook}"


def _runs_ours(command: Any, tails: tuple[tuple[str, ...], ...]) -> bool:
    """Whether COMMAND is a plain command line running catty-ctx with one of TAILS as its last
    words, as install writes it (`--command` may have named another catty-ctx)."""
    if not isinstance(command, str) or _SHELL.search(command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for tail in tails:
        head = words[: -len(tail)]
        if tuple(words[-len(tail):]) == tail and head and (
                any(_CATTY.search(w) for w in head) or head[-2:] == ["-m", "catty_ctx"]):
            return True
    return False


def is_our_hook(handler: Any) -> bool:
    return isinstance(handler, dict) and handler.get("type") == "command" and set(handler) <= _HANDLER_KEYS \
        and _runs_ours(handler.get("command"), OUR_HOOK_TAILS)


# The plugin's own handlers (plugins/catty-ctx/hooks/): a shell line that runs our hook with --plugin.
_PLUGIN_HOOK = re.compile(r"\bcatty[-_]ctx hook (?:claude|codex) (?:pre-compact|session-start) --plugin(?:;|\s|$)")


def is_plugin_hook(handler: Any) -> bool:
    return isinstance(handler, dict) and isinstance(handler.get("command"), str) and _PLUGIN_HOOK.search(handler["command"]) is not None


def is_our_statusline(value: Any) -> bool:
    return isinstance(value, dict) and _runs_ours(value.get("command"), (("statusline",),))


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

    Uninstall removes our hooks from the settings file, and only what its flags name besides: our
    status line with STATUSLINE, our MCP server with MCP (from the file of SCOPE where install
    puts it). A file it leaves an empty object (one install made) is removed, not left as `{}`.
    """
    here = (cwd or Path.cwd()).resolve()
    command_words(command)
    path = claude_settings_path(scope, settings, here)
    if settings is None:
        no_link_below(here if scope != "user" else claude_config_dir(), path)
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
        new, more = remove_statusline(new) if statusline else (new, [])
        what = [f"hooks.{e}" for e in removed] + more
    changes = [c for c in [_change(path, before, doc, new, what, remove=not install)] if c is not None]
    if mcp:
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
        changes += [c for c in [_change(mpath, mbefore, mdoc, mnew, mwhat, remove=not install)] if c is not None]
    return changes
