"""msgspec, the scan's decoder, imported without typing_extensions (docs/usage.md#speed-and-the-cache).

msgspec's Python half imports typing_extensions, which imports `inspect` (and with it ast,
dis, tokenize): about a quarter of msgspec's import, 10 ms of every cold run, for type-hint
helpers that msgspec takes from `typing` when typing_extensions cannot be imported (its own
fallback; on Python 3.10 and later `typing` has what the Structs here use). So the first
import of msgspec in a process, when nothing imported typing_extensions before, runs with it
held off, and the hold is lifted at once: a later `import typing_extensions` (pydantic's, say)
loads it as usual. The wing's ways in that parse (`fanout`, `filescan`, `kept`) import this
module before anything else; importing it again does nothing.
"""
from __future__ import annotations

import sys

if "msgspec" not in sys.modules and "typing_extensions" not in sys.modules:
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # (an import of it raises ImportError)
    try:
        import msgspec  # noqa: F401
    finally:
        if sys.modules.get("typing_extensions", 0) is None:
            del sys.modules["typing_extensions"]
