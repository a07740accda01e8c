"""The `catty-ctx` command line: a thin layer that parses, calls the library and renders.

Each command lives in its own module and imports the library lazily, so `--version` and
`--help` start fast.
"""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from .._version import __version__

app = typer.Typer(
    name="catty-ctx",
    help=(
        "Context lifecycle for LLM-agent sessions on disk: inspect, prune, compact, archive, "
        "repair, fork, resume and account for sessions stored as append-only JSONL.\n\n"
        "Exit status: 0 ok, 1 a check found problems, 2 usage error, 65 bad input data, "
        "73 cannot write output, 75 lock busy (try again), 130 interrupted."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"catty-ctx {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Context lifecycle for LLM-agent sessions on disk."""


# Each command module registers itself on `app` when imported.
from . import append as _append  # noqa: E402,F401
from . import blob as _blob  # noqa: E402,F401
from . import completion as _completion  # noqa: E402,F401
from . import compact as _compact  # noqa: E402,F401
from . import fork as _fork  # noqa: E402,F401
from . import import_ as _import  # noqa: E402,F401
from . import inspect as _inspect  # noqa: E402,F401
from . import instructions as _instructions  # noqa: E402,F401
from . import prune as _prune  # noqa: E402,F401
from . import repair as _repair  # noqa: E402,F401
from . import resume as _resume  # noqa: E402,F401
from . import segment as _segment  # noqa: E402,F401
from . import usage as _usage  # noqa: E402,F401


def main() -> None:
    app(prog_name="catty-ctx")
