"""Entry point of `catty-ctx` and `python -m catty_ctx`.

`--version` is answered before the CLI framework is imported, so scripts that probe for the
tool pay for no more than the interpreter; so is a `usage` question asked before about
unchanged files, when its options are spelled plainly and its answer goes to a pipe
(docs/usage.md#speed-and-the-cache): the answer cache's bytes, as the full run prints them.
"""
from __future__ import annotations

import errno
import gc
import os
import sys

from ._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn


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
    if sys.argv[1:2] == ["usage"] and _cached_usage(sys.argv[2:]):
        return
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


# The options of `usage` (cli/usage.py's table) a cached answer is printed for, as the CLI reads
# them (a test holds the two together): any other (--no-cache, --strict, --verbose, --scheduler,
# --help...) is the full run's.
_USAGE_OPTIONS = {"--by": ("by", True), "--since": ("since", True), "--until": ("until", True), "--timezone": ("tz", True),
                  "--prices": ("prices", True), "--jobs": ("jobs", True), "-j": ("jobs", True), "--json": ("as_json", False),
                  "--allow-empty": ("allow_empty", False)}


def plain_usage(args: list[str]) -> dict[str, Any] | None:
    """`usage`'s keyword arguments for ARGS (as `cli.usage.parse_args` gives them), when ARGS spell
    only the options a cached answer is printed for, plainly; else None."""
    from .cli.plain import read_plain

    got = read_plain(args, _USAGE_OPTIONS, ("-j",), {"jobs": int}, {"jobs": 1}, {})
    return None if got is None else {"paths": got[1], **got[0]}


def _cached_usage(args: list[str]) -> bool:
    """Print the cached answer of `usage ARGS` when the full run would print just those bytes (to a
    pipe; nothing on stderr) and exit 0: whether it did (in any doubt it did not: the full run answers)."""
    opts = plain_usage(args)
    if opts is None or sys.stdout is None or os.environ.get("CATTY_CTX_SCHEDULER"):
        return False
    try:
        if sys.stdout.isatty():
            return False  # (a terminal gets a table, or the document indented)
    except (AttributeError, ValueError):
        return False
    collecting = gc.isenabled()
    gc.disable()  # (as `pipeline.usage`: the kept listings are many small objects, none in a cycle)
    try:
        from . import defaults

        by = opts.get("by", "model")
        if defaults.CONFIG_PROBLEM is not None or by not in defaults.USAGE_BY or by == "block":
            return False
        from .usage.warm import cached, forget, printed

        data = printed(cached(opts["paths"], by=by, since=opts.get("since"), until=opts.get("until"), timezone_name=opts.get("tz"),
                              prices_file=opts.get("prices"), allow_empty=bool(opts.get("allow_empty")), leave_walk=True),
                       "json" if opts.get("as_json") else "lines")
    except KeyboardInterrupt as exc:
        _exit_for(exc)
    except Exception:
        return False  # (an error is the full run's to report, in its words)
    finally:
        if collecting:
            gc.enable()
    if data is None:
        return False  # (the full run takes the walk the lookup made: see `warm.taken`)
    forget()
    try:
        out = sys.stdout.buffer
        out.write(data)
        out.flush()
    except BaseException as exc:  # a full, closed or gone stdout, an interrupt: as the CLI ends on them
        _exit_for(exc)
    from .cli.ending import end, may_end

    if may_end():  # (as the CLI's usage ends: the kept listings are not freed one by one)
        end(os.EX_OK)
    return True


def _exit_for(exc: BaseException) -> NoReturn:
    """Exit as the CLI does on EXC (`cli.app.main`: its code, stdout flushed)."""
    from .cli.errors import exit_code_for, flush_stdout

    code = exit_code_for(exc)
    if code is None:
        raise exc
    sys.exit(flush_stdout(code))


if __name__ == "__main__":
    main()
