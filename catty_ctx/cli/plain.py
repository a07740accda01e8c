"""The plain spellings of a command's options, read without the CLI framework (docs/architecture.md#cli).

`fastpath.parse` reads a fast command's line with this, from the command's option table; the
entry point (`catty_ctx.__main__`) reads a `usage` line with it before any other module of the
CLI loads, to print an answer kept in the cache. Imports nothing.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Container, Mapping
    from typing import Any


def read_plain(args: list[str], known: Mapping[str, tuple[str, bool]], short: Container[str], kinds: Mapping[str, Any],
               least: Mapping[str, float], most: Mapping[str, float]) -> tuple[dict[str, Any], list[str]] | None:
    """(options by parameter, positional arguments) of ARGS, or None when they are not plainly spelled.

    KNOWN: option name → (parameter, takes a value); SHORT: the short names among them; KINDS:
    parameter → int or float (else the text is the value); LEAST and MOST: the bounds of a
    number (LEAST 0 when not given). Takes options before, between and after the positional
    arguments, `--opt=value`, and `--`; an int is digits only and a float any number, within
    its bounds. Anything else (an unknown option, a missing or bad value) gives None.
    """
    opts: dict[str, Any] = {}
    positional: list[str] = []
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
        kind = kinds.get(dest)
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
