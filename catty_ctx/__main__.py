"""Entry point of `catty-ctx` and `python -m catty_ctx`.

`--version` is answered before the CLI framework is imported, so scripts that probe for the
tool pay for no more than the interpreter.
"""
from __future__ import annotations

import errno
import os
import sys

from ._version import __version__


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        try:
            sys.stdout.write(f"catty-ctx {__version__}\n")
            sys.stdout.flush()
        except (OSError, AttributeError) as exc:  # a full or closed stdout: the CLI's error path says so
            from .cli.errors import ClosedOutput, exit_code_for

            if not isinstance(exc, OSError):  # fd 1 closed: Python left sys.stdout None
                exc = ClosedOutput(errno.EBADF, "stdout is closed")
            sys.exit(exit_code_for(exc))
        return
    _take_config(sys.argv)
    from .cli.app import main as cli_main

    cli_main()


def _take_config(argv: list[str]) -> None:
    """`--config FILE` (anywhere on the line) names the config file for this run: it must be
    known before the defaults load, so it travels in CATTY_CTX_CONFIG and leaves ARGV."""
    for i, arg in enumerate(argv[1:], 1):
        if arg == "--":
            return
        if arg == "--config" and i + 1 < len(argv):
            os.environ["CATTY_CTX_CONFIG"] = argv[i + 1]
            del argv[i:i + 2]
            return
        if arg.startswith("--config="):
            os.environ["CATTY_CTX_CONFIG"] = arg[len("--config="):]
            del argv[i]
            return


if __name__ == "__main__":
    main()
