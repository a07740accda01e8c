"""Ending the program once its output is out: the exit frees at once what the teardown would free
object by object (a usage scan's hundreds of thousands of objects: tens of milliseconds).

Imports nothing but os and sys: `errors.end_now` ends a command with it, and so does the entry
point (`catty_ctx.__main__`) once it printed a cached usage answer, before the CLI loads.
"""
from __future__ import annotations

import os
import sys

# Modules that may leave work for the interpreter's exit: handlers (logging's flush, the pools' joins)
# and finalizers (weakref.finalize's, a temporary directory's removal). A usage run loads none.
_LEAVE_WORK = ("logging", "weakref", "tempfile", "multiprocessing", "concurrent.futures", "asyncio")


def may_end() -> bool:
    """Whether this process is the program and may end at once: its entry point (`catty_ctx.__main__`,
    the installed script's) has run, stdout and stderr are its own, no other thread runs, and none
    of the modules that leave work for the exit (`_LEAVE_WORK`) is loaded. Any other caller (a
    test, a library running the CLI in process, a script calling `cli.app.main`) exits as before."""
    threading = sys.modules.get("threading")
    entry = getattr(sys.modules.get("__main__"), "__spec__", None)  # (`python -m catty_ctx`)
    return not (("catty_ctx.__main__" not in sys.modules and getattr(entry, "name", None) != "catty_ctx.__main__")
                or sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__
                or any(m in sys.modules for m in _LEAVE_WORK) or (threading is not None and threading.active_count() > 1))


def end(code: int) -> None:
    """End the process with exit status CODE (stdout already flushed): stderr flushed, then the
    exit; returns when stderr cannot be flushed (the ordinary exit reports it)."""
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except BaseException:
        return
    os._exit(code)
