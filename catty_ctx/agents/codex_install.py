"""Our entries in Codex's own files: `CODEX_HOME/hooks.json` (the hooks), and in
`CODEX_HOME/config.toml` the trust Codex needs before it runs them and, with `--mcp`, the
recall server (docs/agents.md#codex).

hooks.json has the shape of Claude Code's settings (`{"hooks": {EVENT: [groups]}}`) and is
merged the same way (settings.py): the user's groups kept in order, ours appended, a second
run changing nothing, the previous bytes kept beside it.

Codex runs a hook of the user's files only when config.toml trusts it: a table
`[hooks.state."<hooks.json path>:<event>:<group index>:<handler index>"]` whose `trusted_hash`
is the SHA-256 of the handler's normalised identity (the event's snake_case name, the
group's matcher, the handler with its timeout made explicit), written as JSON with sorted
keys and no spaces. Untrusted hooks are skipped without a word, so the installer writes the
trust of its own handlers, never a switch that turns trust off.

config.toml is edited as text, never re-serialised: the user's bytes and comments stay as
they are. Our tables live in one block between two marker comments, appended at the end;
uninstall takes out exactly the tables of that block that are ours (and the markers), and
both directions check with a TOML parser that the document changed by exactly our tables
and nothing else, or refuse with one line.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import DataError
from .plugin import PLUGIN, plugin_json
from .settings import DEFAULT_COMMAND, RECALL_SERVER, Change, add_hooks, codex_home, command_words, hook_command, is_our_hook, is_plugin_hook, json_bytes, read_json_object, remove_hooks

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library (a dependency on 3.10)
    import tomli as tomllib

# The same hook points as Claude Code's (settings.CLAUDE_HOOKS): SessionStart's matcher is
# matched against its `source`, so startup and clear never start our command.
CODEX_HOOKS = (("PreCompact", None, "pre-compact"), ("SessionStart", "compact|resume", "session-start"))
# Codex's names for the events in trust keys and hashes.
EVENT_LABELS = {"PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request", "PostToolUse": "post_tool_use",
                "PreCompact": "pre_compact", "PostCompact": "post_compact", "SessionStart": "session_start",
                "SessionEnd": "session_end", "UserPromptSubmit": "user_prompt_submit", "SubagentStart": "subagent_start",
                "SubagentStop": "subagent_stop", "Stop": "stop"}
# Codex cuts a hook's additionalContext above 2,500 tokens (its estimate: bytes / 4) unless the
# handler raises the limit; our reminder is at most 10,000 characters, so at most 40,000 bytes.
CONTEXT_LIMIT = 10_000
_DEFAULT_CONTEXT_LIMIT = 2_500
_DEFAULT_TIMEOUT = 600
_CONTEXT_EVENTS = ("PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "SubagentStart")
_NO_MATCHER_EVENTS = ("UserPromptSubmit", "Stop")
BLOCK_BEGIN = "# >>> catty-ctx hook install codex: its tables, taken out by `catty-ctx hook uninstall codex`"
BLOCK_END = "# <<< catty-ctx"
_HEADER = re.compile(r"^\s*\[")


# -- trust -----------------------------------------------------------------------------------


def trust_hash(event: str, matcher: str | None, handler: dict[str, Any]) -> str:
    """The `trusted_hash` Codex computes for HANDLER of a group with MATCHER under EVENT."""
    timeout = handler.get("timeout")
    if event == "SessionEnd":
        seconds = min(max(timeout if isinstance(timeout, int) else 1, 1), 3)
    else:
        seconds = max(timeout if isinstance(timeout, int) else _DEFAULT_TIMEOUT, 1)
    normal: dict[str, Any] = {"type": "command", "command": handler.get("command"), "timeout": seconds,
                              "async": bool(handler.get("async", False))}
    if isinstance(handler.get("statusMessage"), str):
        normal["statusMessage"] = handler["statusMessage"]
    limit = handler.get("additionalContextLimit")
    if event in _CONTEXT_EVENTS and isinstance(limit, int) and limit != _DEFAULT_CONTEXT_LIMIT:
        normal["additionalContextLimit"] = limit
    identity: dict[str, Any] = {"event_name": EVENT_LABELS[event], "hooks": [normal]}
    if matcher is not None and event not in _NO_MATCHER_EVENTS:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def hooks_json_key_source(home: Path) -> str:
    """The hooks.json path Codex names in its trust keys: absolute, links resolved as Codex
    resolves its home."""
    return os.path.join(os.path.realpath(home), "hooks.json")


def our_trust(doc: dict[str, Any], key_source: str) -> dict[str, str]:
    """Trust key → hash for every handler of ours in the hooks.json document DOC."""
    out: dict[str, str] = {}
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        if event not in EVENT_LABELS or not isinstance(groups, list):
            continue
        for gi, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            matcher = group.get("matcher") if isinstance(group, dict) else None
            for hi, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if is_our_hook(handler) or is_plugin_hook(handler):
                    key = f"{key_source}:{EVENT_LABELS[event]}:{gi}:{hi}"
                    out[key] = trust_hash(event, matcher if isinstance(matcher, str) else None, handler)
    return out


def codex_plugin_enabled(home: Path) -> str | None:
    """The id of the catty-ctx plugin (`catty-ctx@MARKETPLACE`) when HOME's config.toml enables
    it (`[plugins."catty-ctx@…"]`), else None; a config.toml that cannot be read enables nothing."""
    try:
        plugins = parse_toml((home / "config.toml").read_text(encoding="utf-8"), home / "config.toml").get("plugins")
    except (OSError, UnicodeDecodeError, DataError):
        return None
    if not isinstance(plugins, dict):
        return None
    return next((k for k, v in plugins.items() if k.split("@", 1)[0] == PLUGIN and "@" in k and isinstance(v, dict)
                 and v.get("enabled", True) is True), None)


def codex_plugin_trust(home: Path) -> tuple[str, dict[str, str]] | None:
    """When HOME's config.toml enables the plugin: its id and the trust Codex needs to run its
    hooks (trust key -> hash). Codex keys a plugin's handler by the plugin's id, the hooks file
    its manifest names (relative to the plugin) and the handler's place, and hashes it as any
    handler; the hooks are read from the copy Codex installed (plugins/cache/, the newest)."""
    plugin_id = codex_plugin_enabled(home)
    if plugin_id is None:
        return None
    try:
        copies = sorted((p for p in (home / "plugins" / "cache" / plugin_id.split("@", 1)[1] / PLUGIN).iterdir() if p.is_dir()),
                        key=lambda p: p.stat().st_mtime_ns)
    except OSError:
        return None
    if not copies:
        return None
    named = plugin_json(copies[-1] / ".codex-plugin" / "plugin.json").get("hooks")
    relative = os.path.normpath(named if isinstance(named, str) else "hooks/hooks.json").replace(os.sep, "/")
    return plugin_id, our_trust(plugin_json(copies[-1] / relative), f"{plugin_id}:{relative}")


# -- config.toml as text ------------------------------------------------------------------


def toml_string(value: str) -> str:
    # a JSON string is a TOML basic string (the same escapes; no raw control characters)
    return json.dumps(value, ensure_ascii=False)


def trust_table(key: str, digest: str) -> tuple[str, dict[str, Any]]:
    return f"[hooks.state.{toml_string(key)}]\ntrusted_hash = {toml_string(digest)}\n", {"trusted_hash": digest}


def server_table(command: str, home: Path) -> tuple[str, dict[str, Any]]:
    """The recall server's table: Codex starts it in the session's folder with no CODEX_HOME, so
    it is told the home, resolved (`catty-ctx mcp --codex-home`)."""
    words = command_words(command)
    args = [*words[1:], "mcp", "--codex-home", os.path.realpath(home)]
    text = f"[mcp_servers.{RECALL_SERVER}]\ncommand = {toml_string(words[0])}\nargs = [{', '.join(map(toml_string, args))}]\n"
    return text, {"command": words[0], "args": args}


def read_toml(path: Path) -> tuple[bytes | None, str, dict[str, Any]]:
    """PATH's bytes (None: no such file), its text and its document; a link, a non-file, bytes
    that are not UTF-8 or text that is not TOML are refused with one line."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None, "", {}
    if stat.S_ISLNK(st.st_mode):
        raise DataError("is a symbolic link: left unchanged (give its target's folder with --codex-home)", path=str(path))
    if not stat.S_ISREG(st.st_mode):
        raise DataError("is not a regular file: left unchanged", path=str(path))
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError("is not UTF-8 text: left unchanged", path=str(path)) from None
    return data, text, parse_toml(text, path)


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)) or "not TOML"
        raise DataError(f"not TOML ({message}): left unchanged", path=str(path), line=int(found.group(1)) if found else None) from None


def _lookup(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


def _with(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of DOC with VALUE at PATH (the tables on the way created)."""
    out = dict(doc)
    if len(path) == 1:
        out[path[0]] = value
        return out
    inner = out.get(path[0])
    out[path[0]] = _with(inner if isinstance(inner, dict) else {}, path[1:], value)
    return out


def _without(doc: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """A copy of DOC without PATH, and without the tables that held only it."""
    out = dict(doc)
    if len(path) == 1:
        out.pop(path[0], None)
        return out
    inner = out.get(path[0])
    if isinstance(inner, dict):
        rest = _without(inner, path[1:])
        if rest:
            out[path[0]] = rest
        else:
            del out[path[0]]
    return out


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _block_span(lines: list[str]) -> tuple[int, int] | None:
    """The line indexes of our block's begin and end markers, if the text has the block."""
    begin = next((i for i, line in enumerate(lines) if line.rstrip("\r\n") == BLOCK_BEGIN), None)
    if begin is None:
        return None
    end = next((i for i in range(begin + 1, len(lines)) if lines[i].rstrip("\r\n") == BLOCK_END), None)
    return None if end is None else (begin, end)


def _chunks(lines: list[str]) -> list[list[str]]:
    """LINES cut before each table header: the text of each table (the first chunk holds what
    comes before any header)."""
    chunks: list[list[str]] = [[]]
    for line in lines:
        if _HEADER.match(line):
            chunks.append([])
        chunks[-1].append(line)
    return chunks


def table_name(key_path: tuple[str, ...]) -> str:
    """KEY_PATH as its table header says it: hooks.state."KEY", mcp_servers.NAME."""
    if key_path[:2] == ("hooks", "state"):
        return f"hooks.state.{toml_string(key_path[2])}"
    return ".".join(key_path)


def add_tables(text: str, tables: Sequence[tuple[tuple[str, ...], str, dict[str, Any]]], path: Path) -> tuple[str, list[str]]:
    """TEXT with the TABLES (key path, their text, their value) that are not there yet added to
    our block (made at the end when absent); and the names added. A table of ours already
    there with other contents is refused."""
    doc = parse_toml(text, path)
    expected = doc
    wanted: list[str] = []
    names: list[str] = []
    for key_path, table_text, value in tables:
        now = _lookup(doc, key_path)
        name = table_name(key_path)
        if now == value:
            continue
        if now is not None:
            raise DataError(f"[{name}] is already there with other contents: left unchanged (remove it first)", path=str(path))
        expected = _with(expected, key_path, value)
        wanted.append(table_text)
        names.append(name)
    if not wanted:
        return text, []
    nl = _newline(text)
    body = "".join(t.replace("\n", nl) for t in wanted)
    lines = text.splitlines(keepends=True)
    span = _block_span(lines)
    if span is not None:
        new = "".join(lines[: span[1]]) + body + "".join(lines[span[1]:])
    else:
        # a text without a final newline gets none after the block either: uninstall gives its bytes back
        ends = not text or text.endswith("\n")
        lead = "" if not text else nl if ends else nl + nl
        new = f"{text}{lead}{BLOCK_BEGIN}{nl}{body}{BLOCK_END}{nl if ends else ''}"
    try:
        got = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"our tables cannot be added to it ({exc}): left unchanged", path=str(path)) from None
    if got != expected:
        raise DataError("our tables would change the meaning of its own lines (keys after the end of our block?): left unchanged",
                        path=str(path))
    return new, names


def remove_tables(text: str, ours: Sequence[tuple[str, ...]], path: Path) -> tuple[str, list[str]]:
    """TEXT without the tables of our block that OURS names (key paths), nor the block's
    markers once it holds nothing else; and the names removed."""
    lines = text.splitlines(keepends=True)
    span = _block_span(lines)
    if span is None:
        return text, []
    doc = parse_toml(text, path)
    headers = {f"[{table_name(key_path)}]": key_path for key_path in ours}
    kept: list[str] = []
    removed: list[tuple[str, ...]] = []
    for chunk in _chunks(lines[span[0] + 1: span[1]]):
        key_path = headers.get(chunk[0].strip()) if chunk else None
        if key_path is None:
            kept.extend(chunk)
        else:
            removed.append(key_path)
    if kept:  # something else found its way into the block: keep the block around it
        new = "".join(lines[: span[0] + 1] + kept + lines[span[1]:])
    else:
        before = lines[: span[0]]
        after = lines[span[1] + 1:]
        if before and not before[-1].strip() and not after:
            before = before[:-1]  # the blank line install put before the block
            if not lines[span[1]].endswith("\n") and before:  # ... and the final newline it added to a text without one
                before[-1] = before[-1].rstrip("\r\n")
        new = "".join(before + after)
    expected = doc
    for key_path in removed:
        expected = _without(expected, key_path)
    try:
        got = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        got = None
    if got != expected:
        raise DataError("its lines in and around our block were edited: left unchanged (remove our tables by hand)", path=str(path))
    return new, [table_name(k) for k in removed]


def stale_trust(text: str, source: str, ours: dict[str, str]) -> list[tuple[str, ...]]:
    """The trust tables of our block for a handler of ours at a place it no longer holds (the
    user added or removed groups before it): keyed under SOURCE, holding only the hash of one
    of OURS (trust key -> hash), under a key that is not one of them."""
    lines = text.splitlines(keepends=True)
    span = _block_span(lines)
    if span is None:
        return []
    try:
        block = tomllib.loads("".join(lines[span[0] + 1: span[1]]))
    except tomllib.TOMLDecodeError:
        return []
    state = _lookup(block, ("hooks", "state"))
    hashes = set(ours.values())
    return [("hooks", "state", key) for key, value in (state.items() if isinstance(state, dict) else ())
            if key.startswith(f"{source}:") and key not in ours and isinstance(value, dict)
            and set(value) == {"trusted_hash"} and value["trusted_hash"] in hashes]


# -- the plan --------------------------------------------------------------------------------


def _change(path: Path, before: bytes | None, after: bytes, what: list[str], remove: bool = False) -> Change | None:
    """PATH's rewrite; with REMOVE (an uninstall), a file left empty is removed."""
    return None if before == after or not what else Change(path, before, after, what, remove=remove and not after.strip())


def plan_codex(install: bool, *, home: str | None = None, mcp: bool = False, command: str = DEFAULT_COMMAND,
               plugin: tuple[str, dict[str, str]] | None = None) -> list[Change]:
    """The file changes `hook install codex` (INSTALL) or `hook uninstall codex` makes in Codex's
    home HOME: hooks.json, and config.toml's trust entries (and with MCP its recall server).
    With PLUGIN (the catty-ctx plugin's id and trust, plugin.codex_plugin_trust), install
    writes that trust instead of hooks of its own, and uninstall takes it out too.

    Install also drops the trust of our block for a handler of ours that moved (its key names
    its place). Uninstall removes our hooks from hooks.json and, from config.toml, our block's
    trust entries for them and, with MCP, its recall server: only what its flags name.
    """
    command_words(command)
    root = codex_home(home)
    hooks_path = root / "hooks.json"
    config_path = root / "config.toml"
    before, doc = read_json_object(hooks_path)
    cbefore, ctext, _cdoc = read_toml(config_path)
    source = hooks_json_key_source(root)
    changes: list[Change] = []
    if install:
        entries = [(event, matcher, hook_command(command, "codex", hook)) for event, matcher, hook in CODEX_HOOKS]
        new, added = add_hooks(doc, entries, str(hooks_path)) if plugin is None else (doc, [])
        if "SessionStart" in added:
            new["hooks"]["SessionStart"][-1]["hooks"][0]["additionalContextLimit"] = CONTEXT_LIMIT
        if added:
            changes.append(Change(hooks_path, before, json_bytes(before, doc, new), [f"hooks.{e}" for e in added]))
        trust = our_trust(new, source) if plugin is None else {}
        tables: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
            (("hooks", "state", key), *trust_table(key, digest)) for key, digest in trust.items()]
        tables += [(("hooks", "state", key), *trust_table(key, digest)) for key, digest in (plugin[1] if plugin else {}).items()]
        if mcp and plugin is None:
            tables.append((("mcp_servers", RECALL_SERVER), *server_table(command, root)))
        ctext_new, stale = remove_tables(ctext, stale_trust(ctext, source, trust), config_path)
        ctext_new, names = add_tables(ctext_new, tables, config_path)
        names += [f"(no longer in place) -{name}" for name in stale]
    else:
        new, removed = remove_hooks(doc)
        if removed:
            changes.append(Change(hooks_path, before, json_bytes(before, doc, new), [f"hooks.{e}" for e in removed], remove=not new))
        trust = our_trust(doc, source)
        ours: list[tuple[str, ...]] = [("hooks", "state", key) for key in trust]
        ours += [*stale_trust(ctext, source, trust), *([("mcp_servers", RECALL_SERVER)] if mcp else [])]
        ours += [("hooks", "state", key) for key in (plugin[1] if plugin else {})]
        ctext_new, names = remove_tables(ctext, ours, config_path)
    change = _change(config_path, cbefore, ctext_new.encode("utf-8"), names, remove=not install)
    if change is not None:
        changes.append(change)
    return changes
