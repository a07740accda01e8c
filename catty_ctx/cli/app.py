"""The `catty-ctx` command line: a thin layer that parses, calls the library and renders.

Each command lives in its own module, named by its record in `registry` and imported only
when that command runs, so `--version` and `--help` start fast (the top-level help is made from
the registry alone). The typer application is built on first use of `app`; the commands marked
`fast` parse their own argv when they can (`cli/fastpath.py`) and answer without loading the
CLI framework.
"""
import importlib
import re
import sys
from typing import Annotated, Any

from .. import defaults
from .._version import __version__
from ..errors import EXIT_MEANINGS, ExitCode, UsageError
from .errors import exit_code_for, flush_stdout, guard_closed_stdout, run_guarded
from .registry import BY_NAME, COMMANDS

HELP = (
    "Context lifecycle for LLM-agent sessions on disk: inspect, prune, compact, archive, "
    "repair, fork, resume and account for sessions stored as append-only JSONL."
)


def _help() -> str:
    codes = "; ".join(f"{int(code)} {meaning}" for code, meaning in EXIT_MEANINGS.items())
    return f"{HELP}\n\nExit status: {codes}."


def _build_app() -> "Any":
    import typer

    built = typer.Typer(
        name="catty-ctx",
        help=_help(),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    def _version(value: bool) -> None:
        if value:
            sys.stdout.write(f"catty-ctx {__version__}\n")
            raise typer.Exit(ExitCode.OK)

    # No `from __future__ import annotations` in this module: typer reads these annotations,
    # and they must be evaluated here, where `typer` is in scope.
    @built.callback()
    def _root(
        version: Annotated[
            bool | None,
            typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
        ] = None,
    ) -> None:
        """Context lifecycle for LLM-agent sessions on disk."""

    return built


def get_app() -> "Any":
    """The typer application, built once."""
    built = globals().get("app")
    if built is None:
        built = globals()["app"] = _build_app()
    return built


def __getattr__(name: str) -> "Any":
    if name == "app":  # `from . import app` in a command module
        return get_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Each command lives in its own module, which registers it on `app` when imported (or, for a
# module that starts without typer, when its `declare()` is called). Only the module of the
# command being run is imported (typer then inspects one signature, not all); the top-level
# help lists the registry's summaries without importing any; completion and docs load them all.
COMMAND_MODULES = {c.name: c.module for c in COMMANDS}
FAST_COMMANDS = tuple(c.name for c in COMMANDS if c.fast)  # they parse their plain spellings (`fastpath`)


def load_commands(names: "list[str] | None" = None) -> None:
    """Register the given commands (all when None) on `app`."""

    for name in COMMAND_MODULES if names is None else names:
        module = importlib.import_module(f"{__package__}.{BY_NAME[name].module}")
        declare = getattr(module, "declare", None)
        if declare is not None:
            declare()
    _reflow_help(get_app())


def _reflow_help(typer_app: "Any") -> None:
    """Each paragraph of a command's docstring on one line: the help printer keeps a single
    line break where the source has it, which left ragged lines on a narrow terminal."""
    for info in typer_app.registered_commands:
        doc = info.help or (info.callback.__doc__ if info.callback is not None else None)
        if doc:
            info.help = reflow(doc)
        info.epilog = examples_per_line(info.epilog)
    for group in typer_app.registered_groups:
        group.epilog = examples_per_line(group.epilog)
        group.typer_instance.info.epilog = examples_per_line(group.typer_instance.info.epilog)
        _reflow_help(group.typer_instance)


def examples_per_line(epilog: "Any") -> "Any":
    """An epilog's examples one per line, to copy one at a time: a command declares them as
    `Examples: cmd; cmd` (or already a line each)."""
    if not isinstance(epilog, str) or "\n" in epilog.strip():
        return epilog

    head = re.match(r"\s*(Examples?):", epilog)
    return epilog if head is None else f"{head.group(1)}:\n" + "\n".join(example_lines(epilog))


def example_lines(epilog: "str | None") -> "list[str]":
    """The examples of EPILOG (those after its `Example(s):`), one command line each: they are
    separated by line breaks, or by `; ` where a command line follows (not inside one)."""
    if not epilog:
        return []

    head = re.search(r"(?:^|\n)\s*Examples?:\s*", epilog)
    text = epilog[head.end():] if head else epilog.strip()
    parts = re.split(r"\n+|;\s+(?=catty-ctx |cat |echo |CATTY_CTX_|[A-Z_]+=|\S+ \| )", text)
    return [p.strip().rstrip(";") for p in parts if p.strip()]


def reflow(doc: str) -> str:
    """DOC with its paragraphs (blank-line separated) joined into single lines."""
    return "\n\n".join(" ".join(p.split()) for p in re.split(r"\n[ \t]*\n", doc) if p.strip())


def main(argv: "list[str] | None" = None) -> None:
    guard_closed_stdout()
    code: Any = ExitCode.OK
    try:
        args = sys.argv[1:] if argv is None else argv
        _config_usable(args)
        _run(args)
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:
        code = exit_code_for(exc)
        if code is None:
            raise
    # Output still buffered is written here, so a full disk is exit 73, not a message at exit.
    sys.exit(flush_stdout(code))


def _config_usable(args: "list[str]") -> None:
    """A config file that cannot be used (missing, unreadable, broken, an unknown key, a wrong type,
    a value out of its range) stops every command with one line, exit 2: it is part of how the
    command was called, and would change what it does. The commands an agent runs (its hooks, the
    status line) fail open instead: one warning line (stderr and the hooks' log), the defaults used
    (nothing of the file was applied)."""
    if defaults.CONFIG_PROBLEM is None:
        return
    if args[:1] == ["statusline"] or (args[:1] == ["hook"] and args[1:2] in (["claude"], ["codex"])):
        from ..agents.hooks import mirrors_root, warn  # (only on this path: the status line stays light otherwise)

        given = args[args.index("--mirrors") + 1] if "--mirrors" in args[:-1] else None
        warn(mirrors_root(given), f"{' '.join(args[:3]) if args[0] == 'hook' else args[0]}: the config is not used, the defaults are: "
                                  f"{defaults.CONFIG_PROBLEM}")
        return
    raise UsageError(defaults.CONFIG_PROBLEM)


def list_commands() -> None:
    """Put every command of the registry on `app` by its summary alone, for the top-level help
    (and typer's "no such command"), without importing any command module."""
    built = get_app()
    for c in COMMANDS:
        if not any(info.name == c.name for info in built.registered_commands):
            built.command(c.name, help=c.summary, short_help=c.summary, add_help_option=False)(_listed_only)


def _listed_only() -> None:
    raise AssertionError("a command listed for the help ran in place of its module")  # (never: _run loads a named command's module)


def _run(args: "list[str]") -> None:
    command = BY_NAME.get(args[0]) if args else None
    if command is not None and command.fast:
        module = importlib.import_module(f"{__package__}.{command.module}")  # (only that command's module)
        opts = module.parse_args(args[1:])
        if opts is not None:  # a plain spelling: no need for typer
            sys.exit(run_guarded(module.run, **opts))
    first = next((a for a in args if not a.startswith("-")), None)
    if first in BY_NAME and "--help" not in args[:1]:
        load_commands([first])
    else:
        list_commands()
    get_app()(args=args, prog_name="catty-ctx")
