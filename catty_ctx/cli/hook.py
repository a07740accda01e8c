"""`catty-ctx hook`: the commands an agent runs at its hook points, and their installer.

`hook claude pre-compact|session-start` (and `hook codex …`) run inside the agent at every
compaction: they start without the CLI framework (see `fastpath`) and never fail the agent
(docs/agents.md). `hook install|uninstall claude|codex` edit the agent's settings.
Each subcommand has its own option table, `PARAMS["install"]`, `PARAMS["claude pre-compact"]`….
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..agents import hooks
from ..agents import settings as agent_settings
from ..agents.plugin import claude_plugin_enabled
from ..defaults import HOOK_DEADLINE
from ..errors import UsageError
from .app import get_app
from .errors import note
from .fastpath import declare as declare_command
from .fastpath import declare_group, flag, parse_one, value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AGENTS = ("claude", "codex")
INSTALLABLE = AGENTS
HOOKS = ("pre-compact", "session-start")
_INSTALL = (
    value("scope", "--scope", metavar="SCOPE", help="Claude Code's settings file: user (~/.claude/settings.json), project "
                                           "(.claude/settings.json) or local (.claude/settings.local.json)."),
    value("settings", "--settings", metavar="FILE", help="This settings file instead of the scope's."),
    flag("statusline", "--statusline", help="Also set Claude Code's statusLine to `catty-ctx statusline`."),
    flag("mcp", "--mcp", help="Also register the recall server (`catty-ctx mcp`): Claude Code's .mcp.json (project "
                                     "scope) or ~/.claude.json; Codex's config.toml ([mcp_servers.catty-recall])."),
    value("codex_home", "--codex-home", metavar="DIR", help="Codex's home, holding hooks.json and config.toml (default: CODEX_HOME, else ~/.codex)."),
    value("command", "--command", metavar="CMD", help="The command line that runs catty-ctx, as the agent should call it (default: catty-ctx)."),
    flag("dry_run", "--dry-run", help="Print the change as a diff; write nothing."),
)
_HOOK = (
    value("deadline", "--deadline", kind=float, metavar="SECONDS", help="Give up (exit 0, one line on stderr) after this long.", min=0.1),
    value("mirrors", "--mirrors", metavar="DIR", help="Keep the mirrors here (default: CATTY_CTX_MIRRORS, else $XDG_DATA_HOME/catty-ctx/mirrors)."),
    flag("plugin", "--plugin", help="Run as the catty-ctx plugin's hook: do nothing when the hooks `hook install` writes are in "
                                    "the agent's settings (they run instead); name the plugin's recall tool."),
)
PARAMS: dict[str, Any] = {"install": _INSTALL, "uninstall": _INSTALL, "claude pre-compact": _HOOK, "claude session-start": _HOOK,
                          "codex pre-compact": _HOOK, "codex session-start": _HOOK}
HOOK_DOCS = {
    "pre-compact": """Bring the session's mirror up to date and archive the span since the last compaction.

    Reads the agent's hook JSON on stdin (session_id, transcript_path, cwd, trigger). Never fails
    the agent: any error is one stderr line and a line in the mirror's log, exit 0.
    """,
    "session-start": """After a compaction (source compact) or a resume: print the hook JSON whose
    additionalContext is the continuation reminder built from the mirror. Prints nothing for
    startup and clear. Never fails the agent.
    """,
}
DOCS = {
    "install": """Add catty-ctx's hooks to the agent's settings (claude or codex).

    Every existing key and hook is kept in order; a second run changes nothing; the previous
    bytes are kept as NAME.catty-ctx.bak; a file that is not plain JSON is refused. For codex:
    CODEX_HOME/hooks.json, and in config.toml (edited as text, its bytes kept) the trust
    entries Codex needs to run them.
    """,
    "uninstall": "Remove exactly the entries `hook install` adds from the agent's settings.",
}
EPILOGS = {
    "install": ("Examples: catty-ctx hook install claude; catty-ctx hook install claude --scope project --mcp --statusline --dry-run; "
                "catty-ctx hook install codex --mcp"),
    "uninstall": "Examples: catty-ctx hook uninstall claude --scope project; catty-ctx hook uninstall codex",
    "pre-compact": "Example: catty-ctx hook claude pre-compact < hook.json",
    "session-start": "Example: catty-ctx hook claude session-start < hook.json",
}
HOOK_HELP = "The agents' hook commands (claude, codex) and their installer (install, uninstall)."
HOOK_EPILOG = "Examples: catty-ctx hook install claude --mcp; catty-ctx hook uninstall claude"


def _table(key: str) -> Any:
    return PARAMS.get(key)


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS (the subcommand first), or None when typer should
    parse them (see `fastpath.parse`)."""
    if args[:1] in (["install"], ["uninstall"]):
        got = parse_one(args[1:], PARAMS[args[0]], "agent")
        return None if got is None or got["agent"] not in AGENTS else {"subcommand": args[0], **got}
    key = " ".join(args[:2])
    table = _table(key)
    if table is None:
        return None
    got = parse_one(args[2:], table)
    return None if got is None else {"subcommand": key, **got}


def declare() -> None:
    """Register `hook` and its subcommands on the typer application, from PARAMS."""
    if any(group.name == "hook" for group in get_app().registered_groups):
        return
    hook_app = declare_group("hook", HOOK_HELP, HOOK_EPILOG)
    agent_arg = ("AGENT", "claude or codex.")
    for name in ("install", "uninstall"):
        declare_command(name, RUNS[name], PARAMS[name], DOCS[name], EPILOGS[name], {"agent": agent_arg}, on=hook_app)
    for agent in AGENTS:
        hooks = [h for h in HOOKS if f"{agent} {h}" in PARAMS]
        if not hooks:
            continue
        agent_app = declare_group(agent, f"The hook commands {'Claude Code' if agent == 'claude' else 'Codex'} runs.",
                                  f"Example: echo '{{\"session_id\": \"S\", \"source\": \"compact\"}}' | catty-ctx hook {agent} session-start",
                                  on=hook_app)
        for hook in hooks:
            declare_command(hook, RUNS[f"{agent} {hook}"], PARAMS[f"{agent} {hook}"], HOOK_DOCS[hook], EPILOGS[hook], {}, on=agent_app)


def run(subcommand: str, **kwargs: Any) -> None:
    """Run SUBCOMMAND with its keyword arguments (from `parse_args`)."""
    RUNS[subcommand](**kwargs)


def _agent(agent: str) -> str:
    if agent not in AGENTS:
        raise UsageError(f"AGENT: one of {', '.join(AGENTS)}, not {agent!r}")
    return agent


def _edit(install: bool, agent: str, scope: str, settings: str | None, statusline: bool, mcp: bool, command: str, dry_run: bool,
          codex_home: str | None) -> None:
    if _agent(agent) not in INSTALLABLE:
        raise UsageError(f"AGENT: hook install knows {', '.join(INSTALLABLE)}")
    if agent == "codex":
        for flag, given in (("--statusline", statusline), ("--settings", settings is not None), ("--scope", scope != "user")):
            if given:
                raise UsageError(f"{flag}: not for codex (its hooks live in CODEX_HOME; see --codex-home)")
        from ..agents import codex_install

        plugin = codex_install.codex_plugin_trust(codex_install.codex_home(codex_home))
        if plugin is not None and install:
            note(f"the catty-ctx plugin ({plugin[0]}) is enabled in config.toml: install trusts its hooks instead of adding ours, "
                 "and leaves its recall server as it is (docs/agents.md#the-plugin)")
        changes = codex_install.plan_codex(install, home=codex_home, mcp=mcp, command=command, plugin=plugin)
    else:
        if codex_home is not None:
            raise UsageError("--codex-home: only for codex")
        enabled = claude_plugin_enabled(Path.cwd()) if install else None
        if enabled is not None:
            note(f"the catty-ctx plugin is enabled in {enabled} (enabledPlugins): its hooks and recall server run, "
                 "so install leaves ours out (docs/agents.md#the-plugin)")
        changes = agent_settings.plan_claude(install, scope=scope, settings=settings, statusline=statusline, mcp=mcp and enabled is None,
                                             command=command, hooks=enabled is None)
    verb = "install" if install else "uninstall"
    if not changes:
        note(f"{verb} {agent}: nothing to change")
        return
    if dry_run:
        for change in changes:
            sys.stdout.write(change.diff())
        return
    agent_settings.apply(changes)
    for change in changes:
        kept = f" (previous bytes in {agent_settings.backup_path(change.path)})" if change.before is not None else ""
        done = "added" if install else "removed"
        sys.stdout.write(f"{change.path}: {done} {', '.join(change.what)}{kept}\n")


def install(agent: str, scope: str = "user", settings: str | None = None, statusline: bool = False, mcp: bool = False,
            command: str = "catty-ctx", dry_run: bool = False, codex_home: str | None = None) -> None:
    """Add our hooks (and with --mcp the recall server, with --statusline the status line) to AGENT's settings."""
    _edit(True, agent, scope, settings, statusline, mcp, command, dry_run, codex_home)


def uninstall(agent: str, scope: str = "user", settings: str | None = None, statusline: bool = False, mcp: bool = False,
              command: str = "catty-ctx", dry_run: bool = False, codex_home: str | None = None) -> None:
    """Remove what `install` adds from AGENT's settings."""
    _edit(False, agent, scope, settings, statusline, mcp, command, dry_run, codex_home)


def _hook(agent: str, hook: str, deadline: float, mirrors: str | None, plugin: bool) -> None:
    root = hooks.mirrors_root(mirrors)
    fmt = "claude" if agent == "claude" else "codex"
    if hook == "pre-compact":
        hooks.fail_open(agent, hook, root, deadline, lambda: hooks.pre_compact(agent, fmt, sys.stdin.buffer, root, deadline, plugin))
        return
    out: list[str] = []
    hooks.fail_open(agent, hook, root, deadline,
                    lambda: hooks.session_start(agent, fmt, sys.stdin.buffer, _Collect(out), root, deadline, plugin))
    sys.stdout.write("".join(out))


class _Collect:
    """Where session-start writes: printed only when the whole reminder was built."""

    def __init__(self, into: list[str]) -> None:
        self.into = into

    def write(self, text: str) -> None:
        self.into.append(text)


def claude_pre_compact(deadline: float = HOOK_DEADLINE, mirrors: str | None = None, plugin: bool = False) -> None:
    """Claude Code's PreCompact: bring the mirror up to date."""
    _hook("claude", "pre-compact", deadline, mirrors, plugin)


def claude_session_start(deadline: float = HOOK_DEADLINE, mirrors: str | None = None, plugin: bool = False) -> None:
    """Claude Code's SessionStart: the continuation reminder after a compaction or a resume."""
    _hook("claude", "session-start", deadline, mirrors, plugin)


def codex_pre_compact(deadline: float = HOOK_DEADLINE, mirrors: str | None = None, plugin: bool = False) -> None:
    """Codex's PreCompact: bring the mirror of the rollout up to date."""
    _hook("codex", "pre-compact", deadline, mirrors, plugin)


def codex_session_start(deadline: float = HOOK_DEADLINE, mirrors: str | None = None, plugin: bool = False) -> None:
    """Codex's SessionStart: the continuation reminder after a compaction or a resume."""
    _hook("codex", "session-start", deadline, mirrors, plugin)


RUNS: dict[str, Any] = {"install": install, "uninstall": uninstall, "claude pre-compact": claude_pre_compact,
                        "claude session-start": claude_session_start, "codex pre-compact": codex_pre_compact,
                        "codex session-start": codex_session_start}
