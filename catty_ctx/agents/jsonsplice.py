"""A JSON file edited in place: the bytes of what changed replaced, every other byte kept
(docs/agents.md#set-up: your formatting, key order, escapes and final newline stay yours).

`edited(text, old, new)` takes the text a parse gave OLD from and the document NEW made of it
(keys added at the end of an object, elements appended to or removed from a list, keys removed,
values replaced) and returns the text of NEW: an added member or element is inserted after the
last one, in the container's own layout (one line, or one member a line indented as its
siblings: tabs, two or four spaces, CRLF), a removed one is cut with the separator that joined
it, so removing what was added gives the first bytes back. The result is parsed again and
must equal NEW; anything this cannot splice is None (the caller writes the whole document).
"""
from __future__ import annotations

import json
import re
from typing import Any

_WS = re.compile(r"[ \t\n\r]*")
_BLANK = re.compile(r"[ \t]*")
_DECODER = json.JSONDecoder(parse_constant=float)  # (skips a value: its end is what counts)
Edit = tuple[int, int, str]  # replace text[start:end] with this


class _Unspliceable(Exception):
    """A change this splicer does not make in place (the caller writes the whole document)."""


class _Style:
    """How the file lays out what it holds: its newline, its indent unit (None: all on one line),
    its separators, whether non-ASCII text is escaped."""

    def __init__(self, text: str) -> None:
        self.newline = "\r\n" if "\r\n" in text else "\n"
        unit = re.search(r"\n([ \t]+)[^ \t\r\n]", text)
        self.unit = unit.group(1) if unit else None
        colon = re.search(r'"\s*:([ \t]*)', text)
        self.colon = ":" + (colon.group(1) if colon else " ")
        comma = re.search(r",([ \t]*)[\"\[{0-9tfn-]", text)
        self.comma = "," + (comma.group(1) if comma else " ")
        self.ascii = text.isascii() and "\\u" in text

    def dump(self, value: Any, indent: str) -> str:
        """VALUE laid out as the file would, its lines after the first starting with INDENT."""
        if self.unit is None:
            return json.dumps(value, ensure_ascii=self.ascii, separators=(self.comma, self.colon))
        text = json.dumps(value, ensure_ascii=self.ascii, indent=self.unit, separators=(",", self.colon))
        return text.replace("\n", self.newline + indent)


def edited(text: str, old: Any, new: Any) -> str | None:
    """TEXT (which holds OLD) changed to hold NEW with the fewest bytes changed; None when the
    change is not one this makes in place."""
    style = _Style(text)
    start = _skip(text, 0)
    try:
        edits = _value(text, start, old, new, style)
    except (_Unspliceable, ValueError, IndexError, RecursionError):  # (the whole document is written instead)
        return None
    out = []
    at = 0
    for a, b, repl in sorted(edits):
        if a < at:
            return None  # (overlapping edits: never made by the rules below)
        out += [text[at:a], repl]
        at = b
    result = "".join(out) + text[at:]
    try:
        same = json.loads(result) == new
    except ValueError:
        same = False
    return result if same else None


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _end(text: str, start: int) -> int:
    """Where the value (or key) at START ends."""
    return int(_DECODER.raw_decode(text, start)[1])


def _skip(text: str, at: int, blanks: re.Pattern[str] = _WS) -> int:
    """Where the whitespace (BLANKS) from AT ends."""
    found = blanks.match(text, at)
    return found.end() if found else at


def _line_indent(text: str, at: int) -> str:
    """The whitespace that starts the line holding AT."""
    line = text.rfind("\n", 0, at) + 1
    return text[line:_skip(text, line, _BLANK)]


def _value(text: str, start: int, old: Any, new: Any, style: _Style) -> list[Edit]:
    if _same(old, new):
        return []
    if type(old) is dict and type(new) is dict:
        return _object(text, start, old, new, style)
    if type(old) is list and type(new) is list:
        return _array(text, start, old, new, style)
    return [(start, _end(text, start), style.dump(new, _line_indent(text, start)))]


def _members(text: str, start: int, close: str) -> tuple[list[tuple[int, int, int]], int]:
    """The (start, value start, end) of each member or element of the container opening at START,
    and where its closing bracket is. A member starts at its key (an element at its value)."""
    spans: list[tuple[int, int, int]] = []
    at = _skip(text, start + 1)
    if text[at] == close:
        return spans, at
    while True:
        first = at
        if close == "}":
            at = _skip(text, _skip(text, _end(text, at)) + 1)  # (the key, the colon)
        value = at
        at = _end(text, value)
        spans.append((first, value, at))
        at = _skip(text, at)
        if text[at] == close:
            return spans, at
        at = _skip(text, at + 1)  # (the comma)


def _cuts(spans: list[tuple[int, int, int]], gone: list[bool], open_at: int, close_at: int, multiline: bool) -> list[Edit]:
    """The edits that remove the members marked GONE: each with the separator before it (after
    it, for a leading run), so that a member inserted after the last one comes out byte for byte;
    all of them: the container left empty (`{}`, `[]`)."""
    edits: list[Edit] = []
    if all(gone):  # (what an insertion into an empty container made: `_insert`)
        return [(open_at + 1, close_at if multiline else spans[-1][2], "")]
    lead = 0
    while gone[lead]:
        lead += 1
    if lead:
        edits.append((spans[0][0], spans[lead][0], ""))
    edits += [(spans[i - 1][2], spans[i][2], "") for i in range(lead, len(spans)) if gone[i]]
    return edits


def _insert(text: str, spans: list[tuple[int, int, int]], open_at: int, close_at: int, items: list[str], style: _Style) -> Edit:
    """The edit that appends ITEMS (laid out by `_laid`) after the last member, or into an empty container."""
    if spans:
        last = spans[-1]
        if "\n" in text[open_at:last[0]]:
            indent = _line_indent(text, last[0])
            return last[2], last[2], "".join("," + style.newline + indent + item for item in items)
        sep = text[spans[-2][2]:last[0]] if len(spans) > 1 else style.comma  # (the container's own: "," or ", ")
        return last[2], last[2], "".join(sep + item for item in items)
    if style.unit is None:  # (one line: the items go in before what the container held, `{ }` stays `{ … }`)
        return open_at + 1, open_at + 1, style.comma.join(items)
    outer = _line_indent(text, open_at)
    inner = outer + style.unit
    return open_at + 1, close_at, "".join(style.newline + inner + item + ("," if i < len(items) - 1 else "")
                                          for i, item in enumerate(items)) + style.newline + outer


def _item_indent(text: str, spans: list[tuple[int, int, int]], open_at: int, style: _Style) -> str:
    if spans and "\n" in text[open_at:spans[-1][0]]:
        return _line_indent(text, spans[-1][0])
    return _line_indent(text, open_at) + (style.unit or "")


def _object(text: str, start: int, old: dict[str, Any], new: dict[str, Any], style: _Style) -> list[Edit]:
    spans, close_at = _members(text, start, "}")
    keys = list(old)
    kept = [k for k in keys if k in new]
    added = [k for k in new if k not in old]
    if list(new)[: len(kept)] != kept:
        raise _Unspliceable("keys moved")
    gone = [k not in new for k in keys]
    if any(gone) and added:
        raise _Unspliceable("keys both added and removed")
    edits: list[Edit] = []
    for k, (_first, value, _stop) in zip(keys, spans):
        if k in new:
            edits += _value(text, value, old[k], new[k], style)
    if any(gone):
        edits += _cuts(spans, gone, start, close_at, style.unit is not None)
    if added:
        indent = _item_indent(text, spans, start, style)
        items = [json.dumps(k, ensure_ascii=style.ascii) + style.colon + style.dump(new[k], indent) for k in added]
        edits.append(_insert(text, spans, start, close_at, items, style))
    return edits


def _array(text: str, start: int, old: list[Any], new: list[Any], style: _Style) -> list[Edit]:
    spans, close_at = _members(text, start, "]")
    pairs = _aligned(old, new)
    if pairs is None:
        raise _Unspliceable("elements moved")
    edits: list[Edit] = []
    gone = [True] * len(old)
    appended: list[Any] = []
    for i, j in pairs:
        if i is None and j is not None:
            appended.append(new[j])
        elif i is not None and j is not None:
            gone[i] = False
            edits += _value(text, spans[i][1], old[i], new[j], style)
    if any(gone):
        if appended:
            raise _Unspliceable("elements both added and removed")
        edits += _cuts(spans, gone, start, close_at, style.unit is not None)
    if appended:
        indent = _item_indent(text, spans, start, style)
        edits.append(_insert(text, spans, start, close_at, [style.dump(v, indent) for v in appended], style))
    return edits


def _aligned(old: list[Any], new: list[Any]) -> list[tuple[int | None, int | None]] | None:
    """Each element of NEW paired with the element of OLD it was made from, in order: an equal
    one, else (between two equal ones) the next one of the same type, changed; old elements
    left unpaired are removed, new ones after the last old one appended. None: anything else."""
    pairs: list[tuple[int | None, int | None]] = []
    i = 0
    for j, value in enumerate(new):
        at = next((k for k in range(i, len(old)) if _same(old[k], value)), None)
        if at is None:
            at = next((k for k in range(i, len(old)) if type(old[k]) is type(value)
                       and not any(_same(old[k], v) for v in new[j + 1:])), None)
            if at is None:
                pairs.append((None, j))
                continue
        if pairs and pairs[-1][0] is None:
            return None  # (an element added before one kept: not an append)
        pairs += [(k, None) for k in range(i, at)]
        pairs.append((at, j))
        i = at + 1
    pairs += [(k, None) for k in range(i, len(old))]
    return pairs
