"""Commands that start without the CLI framework: their options declared once, in a table.

typer (with its copy of click) costs more start-up than a cached `usage` answer or a small
`inspect` takes in all. A command that lists its options in a PARAMS table of `Option`
records gets from it both a parser of the plain spellings (`parse`), used first, and its
typer command (`declare`), which takes everything else: help, completion, the man page,
unusual spellings and every error message. The two cannot disagree about what an option is.
"""
# No `from __future__ import annotations`: typer evaluates the annotations made in `declare`.
import re
from types import MappingProxyType
from typing import Annotated, Any, NamedTuple, TypeAlias

from ..defaults import CONNECT_TIMEOUT_MIN
from .app import get_app
from .errors import handle_errors
from .plain import read_plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence


class Option(NamedTuple):
    """One option of a command: its parser, typer command, help, man page and completions are
    all made from this record. Made by `flag`, `value` or `shared`, which name every field."""

    dest: str  # the parameter of the command's `run`
    names: "tuple[str, ...]"  # e.g. ("--format", "-f")
    kind: Any  # int, float or str; None for a flag
    metavar: "str | None"
    help: str
    settings: "Mapping[str, Any]" = MappingProxyType({})  # typer's own option settings: min, max, rich_help_panel
    choices: "tuple[str, ...]" = ()  # the allowed values, offered by the shells' completion


# A command's table: its options, in the order its help lists them.
Params: TypeAlias = "Sequence[Option]"


def flag(dest: str, *names: str, help: str, panel: "str | None" = None) -> Option:
    """An option without a value: DEST is True when it is given."""
    return Option(dest, names, None, None, help, MappingProxyType({"rich_help_panel": panel} if panel else {}))


def value(dest: str, *names: str, kind: Any = str, metavar: str, help: str, choices: "tuple[str, ...]" = (),
          panel: "str | None" = None, **limits: float) -> Option:
    """An option with a value of KIND (int, float or str), at least `min` and at most `max` when
    given (LIMITS); CHOICES its allowed values, when they are few."""
    settings = {**limits, **({"rich_help_panel": panel} if panel else {})}
    return Option(dest, names, kind, metavar, help, MappingProxyType(settings), tuple(choices))


# The options several commands share, declared once: each command's table names them (`shared`),
# and the plain typer commands take them from options.py, which makes them from here.
SHARED: "dict[str, Option]" = {o.dest: o for o in (
    flag("as_json", "--json", help="Print one JSON document (a terminal gets tables, a pipe JSON Lines)."),
    value("lock_timeout", "--lock-timeout", kind=float, metavar="SECONDS", min=0, help="Wait this long for the session lock, then exit 75."),
    value("max_user_bytes", "--max-user-bytes", kind=int, metavar="N", min=0,
          help="A user message longer than N bytes moves to blobs/ with its head and tail kept inline (0: never)."),
    value("max_tool_bytes", "--max-tool-bytes", kind=int, metavar="N", min=0,
          help="A tool output longer than N bytes moves to blobs/ with its head and tail kept inline (0: never)."),
    flag("dry_run", "--dry-run", help="Show what would be done; write nothing."),
    flag("allow_empty", "--allow-empty", help="A ROOT holding no session is fine (exit 0); by default it is a usage error (exit 2)."),
    value("scheduler", "--scheduler", metavar="ADDRESS",
          help="Run the per-session work on a Dask cluster: a scheduler ADDRESS (tcp://host:8786), or local[:N] for a local cluster "
               "of N processes (default: CATTY_CTX_SCHEDULER; needs the extra catty-ctx[dask])."),
    value("connect_timeout", "--connect-timeout", kind=float, metavar="SECONDS", min=CONNECT_TIMEOUT_MIN,
          help="Give up on an unreachable --scheduler (or one with no worker) after this long: exit 69."),
    flag("allow_remote_writes", "--allow-remote-writes",
         help="Let a writer run on a --scheduler cluster (the session lock is flock: a shared filesystem must honour it)."),
    value("agent", "--agent", metavar="ID",
          help="The subagent ID's own conversation (its prompt, its calls, its usage and model) instead of the main loop's; "
               "'inspect --agents' lists them."),
)}


def shared(dest: str) -> Option:
    """The shared option of parameter DEST (SHARED)."""
    return SHARED[dest]


# The positional arguments several commands share, as `declare` takes them: (metavar, help).
# (what every reading command takes: docs/architecture.md#formats-and-sources)
SESSION_ARG = ("SESSION", "A catty session directory or its updates.jsonl, another agent's session file (Claude Code, Codex, "
                          "Gemini CLI, opencode: read as its import), or - for an event stream on stdin.")
TARGET_ARG = ("SESSION|ROOT", "A catty session directory or its updates.jsonl, another agent's session file (Claude Code, Codex, "
                              "Gemini CLI, opencode: read as its import; a writer refuses it), - for an event stream on stdin, "
                              "or a ROOT folder holding sessions at any depth (an agent's home too).")


# The options of a command that can run on a Dask cluster.
CLUSTER = (shared("scheduler"), shared("connect_timeout"))


def options(params: Params) -> "dict[str, tuple[str, bool]]":
    """Option name → (parameter, takes a value): what `parse` knows."""
    return {name: (o.dest, o.kind is not None) for o in params for name in o.names}


def minimums(params: Params) -> "dict[str, float]":
    """Parameter → the least value taken, for the options that have one."""
    return {o.dest: o.settings["min"] for o in params if "min" in o.settings}


def choices(params: Params) -> "dict[str, tuple[str, ...]]":
    """Parameter → its allowed values, for the options that have them."""
    return {o.dest: o.choices for o in params if o.choices}


def parse(args: "list[str]", params: Params) -> "tuple[dict[str, Any], list[str]] | None":
    """(options by parameter, positional arguments) of ARGS, or None when typer should parse them.

    Read by `plain.read_plain` from the table: options before, between and after the positional
    arguments, `--opt=value`, and `--`; an int is digits only and a float any number, each at
    least its least value (`minimums`; 0 when none) and at most the table's `max`. Anything else
    (help, an unknown option, a missing or bad value) is left to typer and its messages.
    """
    short = {name for o in params for name in o.names if not name.startswith("--")}
    most = {o.dest: o.settings["max"] for o in params if "max" in o.settings}
    return read_plain(args, options(params), short, {o.dest: o.kind for o in params}, minimums(params), most)


def parse_one(args: "list[str]", params: Params, *positional: str, required: "int | None" = None) -> "dict[str, Any] | None":
    """`parse` for a command of fixed positional arguments: the keyword arguments of its `run`
    (the arguments named POSITIONAL, in order; the first REQUIRED of them (default: all) must be
    given, the rest take `run`'s defaults), or None when typer should parse them."""
    got = parse(args, params)
    if got is None or not (len(positional) if required is None else required) <= len(got[1]) <= len(positional):
        return None
    return {**dict(zip(positional, got[1])), **got[0]}


# What rich would read as a style tag in help text (`[mcp]`, `[mcp_servers.catty-recall]`, `[1m]`):
# its own escape, done here so that help loads no more of rich than typer does.
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def shown(text: str) -> str:
    """TEXT for typer's rich help: every bracketed part shown as written, none read as markup."""
    return _TAG.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", text)


_SHOWN = re.compile(r"(\\*)\1\\(\[[a-z#/@][^[]*?])")


def as_written(text: str) -> str:
    """TEXT as `shown` took it (the man pages and completions print it without rich)."""
    return _SHOWN.sub(lambda m: f"{m.group(1)}{m.group(2)}", text)


def declare(name: str, run: "Callable[..., None]", params: Params, doc: str, epilog: str, positional: "dict[str, Any]",
            on: "Any" = None) -> None:
    """Register NAME on the typer application (or ON, a sub-application of it): RUN's parameters,
    POSITIONAL's arguments first (each its annotation, or (metavar, help[, choices]) for a text argument, a
    metavar ending in `...` for one or more), then
    the options of PARAMS, with RUN's defaults (a positional argument without one is required, one whose
    default is None may be left out)."""
    import inspect

    import typer

    app = get_app()
    target = app if on is None else on
    group = next((g.name for g in app.registered_groups if g.typer_instance is on), None) if on is not None else None
    path = f"{group} {name}" if group else name
    if any(c.name == name for c in target.registered_commands):
        return
    defaults = {p: v.default for p, v in inspect.signature(run).parameters.items()}
    annotations: dict[str, Any] = {}
    for dest, given in positional.items():
        if isinstance(given, tuple):
            metavar, help_text, *allowed = given
            hint = list[str] if metavar.endswith("...") else str | None if defaults[dest] is None else str
            if allowed:
                allow(path, dest, allowed[0])
            annotations[dest] = Annotated[hint, typer.Argument(metavar=metavar, help=shown(help_text))]
        else:
            annotations[dest] = given
    for o in params:
        if o.choices:
            allow(path, o.dest, o.choices)
        annotations[o.dest] = typer_option(o, optional=defaults[o.dest] is None)

    def command(**kwargs: "Any") -> None:
        run(**kwargs)

    command.__doc__ = shown(doc)
    command.__annotations__ = {**annotations, "return": None}
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # typer reads a function's __signature__
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation,
                           default=defaults[p])
         for p, annotation in annotations.items()])
    target.command(name, epilog=shown(epilog))(handle_errors(command))


def declare_group(name: str, help_text: str, epilog: str, on: "Any" = None) -> "Any":
    """Register the sub-application NAME (its subcommands are declared on it) on the typer
    application, or on ON, a sub-application of it; the sub-application."""
    import typer

    group = typer.Typer(help=shown(help_text), epilog=shown(epilog), no_args_is_help=True)
    (get_app() if on is None else on).add_typer(group, name=name)
    return group


def typer_option(o: Option, optional: bool = False) -> Any:
    """The typer annotation of option O (a None default when OPTIONAL)."""
    import typer

    if o.kind is None:
        return Annotated[bool, typer.Option(*o.names, help=shown(o.help), **o.settings)]
    return Annotated[o.kind | None if optional else o.kind, typer.Option(*o.names, metavar=o.metavar, help=shown(o.help), **o.settings)]


# (command path, parameter) → its allowed values, as `declare` (or a plain typer command, through
# `allow`) gave them: the man pages and the shells' completions read them here, the commands
# check the values themselves, in their own words, whichever parser read them.
CHOICES: "dict[tuple[str, str], tuple[str, ...]]" = {}


def allow(command: str, dest: str, values: "tuple[str, ...] | list[str]") -> None:
    """Record the allowed VALUES of parameter DEST of COMMAND ("segment grep" for a subcommand)."""
    CHOICES[(command, dest)] = tuple(values)
