"""Session text made safe to show: nothing in it may drive the terminal or reorder a line.

A session's text, a path or a file name is data. Shown as it is, an escape sequence would
move the cursor, set the title or write the clipboard, a carriage return would overwrite what
came before, and a bidirectional override would show a line in another order than it is
stored. Every place that shows such text translates it with `CONTROLS` first.
"""
from __future__ import annotations

# C0 controls (but tab and newline) and DEL as U+2400's control pictures; C1 controls as
# U+FFFD; the bidirectional embeddings, overrides and isolates as the visible text `\u202e`.
CONTROLS: dict[int, int | str] = {c: 0x2400 + c for c in range(32) if c not in (9, 10)}
CONTROLS[127] = 0x2421
CONTROLS.update({c: 0xFFFD for c in range(0x80, 0xA0)})
CONTROLS.update({c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)})


def visible(text: str) -> str:
    """TEXT with every control and bidirectional-control character shown, not obeyed."""
    return text.translate(CONTROLS)
