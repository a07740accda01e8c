"""Entry point of `catty-ctx` and `python -m catty_ctx`.

`--version` is answered before the CLI framework is imported, so scripts that probe for the
tool pay for no more than the interpreter.
"""
from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from ._version import __version__

        sys.stdout.write(f"catty-ctx {__version__}\n")
        return
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
