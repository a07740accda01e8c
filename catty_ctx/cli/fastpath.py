"""Commands that start without the CLI framework: their options declared once, in a table.

typer (with its copy of click) costs more start-up than a cached `usage` answer or a small
`inspect` takes in all. A command that lists its options in a PARAMS table — (parameter of
its `run`, option names, value type (None: a flag), metavar, help, and optionally a dict of
typer's own option settings: `min`, `max`, `rich_help_panel`) — gets from it both a
parser of the plain spellings (`parse`), used first, and its typer command (`declare`), which
takes everything else: help, completion, the man page, unusual spellings and every error
message. The two cannot disagree about what an option is.
"""
# No `from __future__ import annotations`: typer evaluates the annotations made in `declare`.
# Nothing here imports typing at load (milliseconds at start-up).
from ..defaults import CONNECT_TIMEOUT_MIN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    # Each entry: (parameter of `run`, option names, value type (None: a flag), metavar, help (None: a
    # shared option)[, typer's option settings]).
    Params = tuple[tuple[Any, ...], ...]

# The shared options' (options.py) least values above 0, the parser's own floor (`minimums` gives
# them to the table entries that take those options).
SHARED_MINIMUMS = {"connect_timeout": CONNECT_TIMEOUT_MIN}
# The entries of a command that can run on a Dask cluster: --scheduler and --connect-timeout (shared options).
CLUSTER = (("scheduler", ("--scheduler",), str, "ADDRESS", None), ("connect_timeout", ("--connect-timeout",), float, "SECONDS", None))


def options(params: "Params") -> "dict[str, tuple[str, bool]]":
    """Option name → (parameter, takes a value): what `parse` knows."""
    return {name: (dest, kind is not None) for dest, names, kind, *_rest in params for name in names}


def _settings(entry: "tuple[Any, ...]") -> "dict[str, Any]":
    return entry[5] if len(entry) > 5 else {}


def minimums(params: "Params") -> "dict[str, float]":
    """Parameter → the least value taken: the table's `min`, else the shared option's own
    (SHARED_MINIMUMS), else none."""
    out = {entry[0]: SHARED_MINIMUMS[entry[0]] for entry in params if entry[4] is None and entry[0] in SHARED_MINIMUMS}
    out.update((entry[0], _settings(entry)["min"]) for entry in params if "min" in _settings(entry))
    return out


def parse(args: "list[str]", params: "Params") -> "tuple[dict[str, Any], list[str]] | None":
    """(options by parameter, positional arguments) of ARGS, or None when typer should parse them.

    Takes options before, between and after the positional arguments, `--opt=value`, and `--`;
    an int is digits only and a float any number, each at least its least value (`minimums`;
    0 when none) and at most the table's `max`. Anything else (help, an unknown option, a missing or
    bad value) is left to typer and its messages.
    """
    known = options(params)
    least = minimums(params)
    short = {name for _dest, names, *_rest in params for name in names if not name.startswith("--")}
    kinds = {dest: kind for dest, _names, kind, *_rest in params}
    most = {entry[0]: _settings(entry)["max"] for entry in params if "max" in _settings(entry)}
    opts: "dict[str, Any]" = {}
    positional: "list[str]" = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            positional.extend(args[i:])
            break
        if a == "-" or not a.startswith("-"):
            positional.append(a)
            continue
        name, eq, value = a.partition("=")
        spec = known.get(name)
        if spec is None or (eq and not spec[1]) or (name in short and eq):
            return None
        dest, takes_value = spec
        if not takes_value:
            opts[dest] = True
            continue
        if not eq:
            if i >= len(args):
                return None
            value = args[i]
            i += 1
        opts[dest] = value
    for dest, text in list(opts.items()):
        kind = kinds[dest]
        if kind is int:
            if not (text.isascii() and text.isdigit()):
                return None
            opts[dest] = int(text)
        elif kind is float:
            try:
                opts[dest] = float(text)
            except ValueError:
                return None
        else:
            continue
        if not least.get(dest, 0) <= opts[dest] <= most.get(dest, opts[dest]):  # (nan too)
            return None
    return opts, positional


def parse_one(args: "list[str]", params: "Params", *positional: str, required: "int | None" = None) -> "dict[str, Any] | None":
    """`parse` for a command of fixed positional arguments: the keyword arguments of its `run`
    (the arguments named POSITIONAL, in order; the first REQUIRED of them (default: all) must be
    given, the rest take `run`'s defaults), or None when typer should parse them."""
    got = parse(args, params)
    if got is None or not (len(positional) if required is None else required) <= len(got[1]) <= len(positional):
        return None
    return {**dict(zip(positional, got[1])), **got[0]}


def declare(name: str, run: "Callable[..., None]", params: "Params", doc: str, epilog: str, positional: "dict[str, Any]",
            on: "Any" = None) -> None:
    """Register NAME on the typer application (or ON, a sub-application of it): RUN's parameters,
    POSITIONAL's arguments first (each its annotation, or (metavar, help) for a text argument), then
    the options of PARAMS (an entry without help takes the shared option of that parameter from
    `options.py`), with RUN's defaults (a positional argument without one is required, one whose
    default is None may be left out)."""
    # start-up: typer only when a command's own parser declines (a plain spelling never loads it)
    import inspect
    from typing import Annotated, Optional

    import typer

    from . import app
    from .errors import handle_errors
    from .options import (AllowEmptyOpt, AllowRemoteWritesOpt, ConnectTimeoutOpt, DryRunOpt, JsonOpt, LockTimeoutOpt, MaxToolBytesOpt,
                          MaxUserBytesOpt, SchedulerOpt)

    shared = {"as_json": JsonOpt, "scheduler": SchedulerOpt, "connect_timeout": ConnectTimeoutOpt, "allow_empty": AllowEmptyOpt,
              "lock_timeout": LockTimeoutOpt, "max_user_bytes": MaxUserBytesOpt, "max_tool_bytes": MaxToolBytesOpt,
              "dry_run": DryRunOpt, "allow_remote_writes": AllowRemoteWritesOpt}
    target = app if on is None else on
    if any(c.name == name for c in target.registered_commands):
        return
    defaults = {p: v.default for p, v in inspect.signature(run).parameters.items()}
    annotations: "dict[str, Any]" = {}
    for dest, given in positional.items():
        if isinstance(given, tuple):
            metavar, help_text = given
            hint = Optional[str] if defaults[dest] is None else str
            annotations[dest] = Annotated[hint, typer.Argument(metavar=metavar, help=help_text)]
        else:
            annotations[dest] = given
    for entry in params:
        dest, names, kind, metavar, help_text = entry[:5]
        extra = _settings(entry)
        if help_text is None:
            annotations[dest] = shared[dest]
        elif kind is None:
            annotations[dest] = Annotated[bool, typer.Option(*names, help=help_text, **extra)]
        else:
            hint = kind if defaults[dest] is not None else Optional[kind]  # type: ignore[valid-type]
            annotations[dest] = Annotated[hint, typer.Option(*names, metavar=metavar, help=help_text, **extra)]

    def command(**kwargs: "Any") -> None:
        run(**kwargs)

    command.__doc__ = doc
    command.__annotations__ = {**annotations, "return": None}
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation,
                           default=defaults[p])
         for p, annotation in annotations.items()])
    target.command(name, epilog=epilog)(handle_errors(command))
