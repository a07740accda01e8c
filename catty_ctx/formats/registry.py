"""The format registry: one record per agent's session format (docs/architecture.md#native-sessions).

Everything that must know the formats asks here: `import` (which importer module, the list of
names in its help and errors), `detect` (which forms to look for), `ownership` (the label a
writer's refusal names), the ROOT walk of native homes (`formats.roots`: which file names hold
a session, which folders belong to one session), the usage ledger (its parser module) and the
homes `usage` reads with no path. Adding a format is one importer module and one record here.

Start-up: this module imports nothing but `os` (loaded with the interpreter): a writer's
ownership check reads it on every run.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping


class Format:
    """One agent format: what it is called, where it lives and how its sessions are laid out."""

    __slots__ = (
        "agent",
        "database",
        "forms",
        "home_env",
        "home_env_adds",
        "home_env_list",
        "homes",
        "importer",
        "label",
        "member_dirs",
        "member_globs",
        "name",
        "session_names",
        "skip_names",
        "tree_marks",
        "usage",
    )

    def __init__(
        self,
        name: str,
        *,
        agent: str,
        label: str,
        forms: tuple[str, ...],
        importer: str | None = None,
        own_usage: bool = True,
        home_env: str | None = None,
        home_env_list: bool = False,
        home_env_adds: bool = False,
        homes: tuple[str, ...] = (),
        session_names: tuple[str, ...] = (),
        skip_names: tuple[str, ...] = (),
        member_dirs: tuple[str, ...] = (),
        member_globs: tuple[str, ...] = (),
        tree_marks: tuple[str, ...] = (),
        database: str | None = None,
    ) -> None:
        self.name = name  # the `import FORMAT` name, the `source.format` of an imported session
        self.agent = agent  # the agent's own name, as a reader shows it
        self.label = label  # what one of its files is, in a sentence
        # Its modules, named after it: the one under catty_ctx.importers.pipeline with `convert(path,
        # start, ...)` (unless IMPORTER names another), the one under catty_ctx.usage.pipeline that parses
        # its calls (None without OWN_USAGE: the ledger reads its imported sessions).
        self.importer = importer or name
        # How `detect` tells it: "jsonl" (its line shapes), "document" (one JSON document),
        # "tree" (a storage folder), "sqlite" (a database file).
        self.forms = forms
        self.usage = name if own_usage else None
        self.home_env = home_env  # the variable that moves its home
        self.home_env_list = home_env_list  # ... holding a comma-separated list of homes
        self.home_env_adds = home_env_adds  # ... read besides the default homes, not instead of them
        self.homes = homes  # default homes ("~" the user's home, "$XDG_DATA_HOME" with its default)
        # A ROOT's layout: file names (glob patterns) that hold one main session each (the content
        # decides: the walk reads a few lines), names that belong to another session (old
        # subagent files beside their parent), folders inside a session's own folder that hold
        # its member files (never walked for sessions), patterns of those member files relative
        # to the main file's stem, the folder names marking a storage tree, a database's name.
        self.session_names = session_names
        self.skip_names = skip_names
        self.member_dirs = member_dirs
        self.member_globs = member_globs
        self.tree_marks = tree_marks
        self.database = database

    def __repr__(self) -> str:
        return f"Format({self.name!r})"


CLAUDE = Format(
    "claude",
    agent="Claude Code",
    label="Claude Code transcript",
    forms=("jsonl",),
    home_env="CLAUDE_CONFIG_DIR",
    home_env_list=True,
    homes=("~/.config/claude", "~/.claude"),
    session_names=("*.jsonl",),
    skip_names=("agent-*.jsonl",),
    member_dirs=("subagents", "tool-results"),
    # <stem>/subagents/agent-*.jsonl (with agent-*.meta.json sidecars), workflow subagents
    # <stem>/subagents/workflows/<wf>/agent-*.jsonl, and the older agent-*.jsonl beside the file.
    member_globs=("{stem}/subagents/*.jsonl", "{stem}/subagents/*.meta.json", "{stem}/subagents/workflows/*/*.jsonl",
                  "{stem}/subagents/workflows/*/*.meta.json", "agent-*.jsonl"),
)
CODEX = Format(
    "codex",
    agent="Codex",
    label="Codex rollout",
    forms=("jsonl", "document"),
    home_env="CODEX_HOME",
    homes=("~/.codex",),
    session_names=("rollout-*.jsonl", "rollout-*.jsonl.zst", "rollout-*.json"),
)
GEMINI = Format(
    "gemini",
    agent="Gemini CLI",
    label="Gemini CLI session",
    forms=("jsonl", "document"),
    homes=("~/.gemini",),
    session_names=("session-*.json", "session-*.jsonl"),
)
OPENCODE = Format(
    "opencode",
    agent="opencode",
    label="opencode session",
    forms=("tree", "sqlite", "document"),
    home_env="XDG_DATA_HOME",
    homes=("$XDG_DATA_HOME/opencode",),
    session_names=("ses_*.json",),
    tree_marks=("session", "message"),
    database="opencode.db",
)
GROK = Format(
    "grok",
    agent="Grok Build",
    label="Grok Build session",
    forms=("jsonl",),
    home_env="GROK_HOME",
    home_env_adds=True,  # a session run with GROK_HOME elsewhere and one in ~/.grok are both the user's
    homes=("~/.grok",),
    # A session is a folder whose updates.jsonl carries grok's envelopes (formats.grok decides
    # by content: the name is catty-ctx's own log's); the folders inside it hold its members.
    session_names=("updates.jsonl",),
    member_dirs=("subagents", "compaction", "compaction_checkpoints", "compaction_requests", "terminal"),
)
OPENAI = Format("openai", agent="OpenAI messages", label="OpenAI messages document", forms=("document", "jsonl"),
                importer="messages", own_usage=False)
ANTHROPIC = Format("anthropic", agent="Anthropic messages", label="Anthropic messages document", forms=("document", "jsonl"),
                   importer="messages", own_usage=False)

FORMATS: dict[str, Format] = {f.name: f for f in (CLAUDE, CODEX, OPENCODE, GEMINI, GROK, OPENAI, ANTHROPIC)}
NAMES = tuple(FORMATS)  # in the order `import --help` lists them
AGENTS = tuple(f for f in FORMATS.values() if f.homes)  # the formats an agent keeps in a home folder
AGENT_NAMES = tuple(f.name for f in AGENTS)


def get(name: str) -> Format:
    return FORMATS[name]


def label(name: str) -> str:
    """What a file of format NAME is ("Claude Code transcript"); an unknown name stands for itself."""
    fmt = FORMATS.get(name)
    return fmt.label if fmt is not None else name


def names_text() -> str:
    """The format names as one list in a sentence: "claude, codex, ... anthropic"."""
    return ", ".join(NAMES)


def with_form(form: str) -> tuple[str, ...]:
    """The names of the formats `detect` tells by FORM ("jsonl", "document", "tree", "sqlite")."""
    return tuple(f.name for f in FORMATS.values() if form in f.forms)


def home_folders(fmt: Format, environ: Mapping[str, str], user_home: str) -> list[str]:
    """Where FMT keeps its sessions for a user (existing or not), in the order they are read:
    the folders its variable names, else its defaults (and them too when its variable adds)."""
    value = environ.get(fmt.home_env or "") if fmt.home_env else None
    defaults = [_expand(h, environ, user_home) for h in fmt.homes]
    if value and fmt.home_env != "XDG_DATA_HOME":
        parts = value.split(",") if fmt.home_env_list else [value]
        named = [_expand(p.strip(), environ, user_home) for p in parts if p.strip()]
        return [*named, *(d for d in defaults if d not in named)] if fmt.home_env_adds else named
    return defaults


def homes(environ: Mapping[str, str] | None = None, user_home: str | None = None) -> Iterator[tuple[Format, str]]:
    """(format, folder) of every agent home that exists for the user, in registry order."""
    env = os.environ if environ is None else environ
    base = user_home if user_home is not None else os.path.expanduser("~")
    for fmt in AGENTS:
        for folder in home_folders(fmt, env, base):
            if os.path.isdir(folder):
                yield fmt, folder


def _expand(spec: str, environ: Mapping[str, str], user_home: str) -> str:
    if spec.startswith("$XDG_DATA_HOME"):
        data = environ.get("XDG_DATA_HOME") or user_home.rstrip("/") + "/.local/share"
        return data + spec[len("$XDG_DATA_HOME"):]
    if spec == "~" or spec.startswith("~/"):
        return user_home.rstrip("/") + spec[1:]
    return spec
