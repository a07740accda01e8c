"""One output layer for every command: rich on a terminal, JSON Lines in a pipe, --json one document.

Rows stream out as they are produced; rich draws only for a terminal.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from types import SimpleNamespace
from typing import Any

from ..visible import CONTROLS, stdout_binary

_NL = b"\n"


def stdout_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _out() -> Any:
    return stdout_binary()


def _json() -> Any:
    """The one JSON encoder of everything printed: msgspec's (compact, keys in order, int keys as strings).

    Not orjson: `usage` decodes with msgspec, and orjson's import alone (it loads dataclasses,
    uuid and more) would cost a small incremental run more than its own work.
    """
    import msgspec.json

    return msgspec.json


def _encoder() -> Any:
    return _json().encode


def json_bytes(doc: Any, *, pretty: bool = False) -> bytes:
    """One JSON document as printed: indented for a terminal, one line for a pipe."""
    data = _encoder()(doc)
    if pretty:
        data = _json().format(data, indent=2)
    return data + _NL


def lines_bytes(rows: Iterable[Any]) -> bytes:
    """Rows as JSON Lines, as `write_lines` prints them."""
    dumps = _encoder()
    return b"".join(dumps(row) + _NL for row in rows)


def write_bytes(data: bytes) -> None:
    """Output already rendered (by `json_bytes` or `lines_bytes`)."""
    out = _out()
    out.write(data)
    out.flush()


def write_json(doc: Any, *, pretty: bool | None = None) -> None:
    """One JSON document; indented on a terminal, one line in a pipe."""
    write_bytes(json_bytes(doc, pretty=stdout_tty() if pretty is None else pretty))


def write_lines(rows: Iterable[Any]) -> int:
    """JSON Lines, streamed; returns how many were written."""
    dumps = _encoder()
    out = _out()
    n = 0
    for row in rows:
        out.write(dumps(row) + _NL)
        n += 1
    out.flush()
    return n


def write_json_array(key: str, rows: Iterable[Any], extra: dict[str, Any] | None = None) -> int:
    """`{"key": [row, …]}` written row by row, never built whole in memory."""
    dumps = _encoder()
    out = _out()
    out.write(b'{"' + key.encode() + b'":[')
    n = 0
    for row in rows:
        if n:
            out.write(b",")
        out.write(dumps(row))
        n += 1
    out.write(b"]")
    for k, v in (extra or {}).items():
        out.write(b"," + dumps(k) + b":" + dumps(v))
    out.write(b"}\n")
    out.flush()
    return n


@cache
def _rich() -> Any:
    """The parts of rich this layer draws with, for a terminal."""
    from rich import cells, console, progress, table, text

    return SimpleNamespace(Console=console.Console, Text=text.Text, Table=table.Table, cell_len=cells.cell_len, progress=progress)


def console(stderr: bool = False) -> Any:
    """A console that prints text as it is: no markup, no emoji codes, no highlighting.

    Session text is data: `[bold]`, `[/\\]` or `:smile:` in a message must reach the screen
    unchanged, so nothing printed through this layer is ever parsed.
    """
    return _rich().Console(stderr=stderr, highlight=False, soft_wrap=False, markup=False, emoji=False)


def plain(value: Any) -> str:
    """A value as a table cell or message shows it: lists as words, no `None`, no Python reprs."""
    if value is None:
        return ""
    if value is True or value is False:
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={plain(v)}" for k, v in value.items())
    return str(value).translate(CONTROLS)


def text(*parts: Any, style: str = "") -> Any:
    """PARTS (values, or Texts made here) as one rich Text: printed verbatim, whatever brackets
    they hold. The only way cli/ builds styled text, so none of it is ever markup."""
    Text = _rich().Text
    out = Text(style=style)
    for part in parts:
        out.append(part if isinstance(part, Text) else plain(part))
    return out


class Column:
    """A table column: the row key, how its cells behave on a narrow terminal, its header.

    kind: "num" right-aligned and never wrapped; "word" never wrapped; "text" wraps between
    words (folding only a word too long for the column); "path" one line, shortened from the
    left; "id" one line, shortened from the right. The header is the key with spaces for
    underscores, so a narrow column wraps it between words, never inside one.
    """

    __slots__ = ("header", "key", "kind")

    def __init__(self, key: str, kind: str = "word", header: str | None = None) -> None:
        self.key = key
        self.kind = kind
        self.header = key.replace("_", " ") if header is None else header


_GAP = 3  # a column separator and its padding
_FLOOR = 8  # a text, path or id column is squeezed below this (or its header's longest word) only as a last resort


def _columns(columns: Sequence[str | Column], right: Sequence[str]) -> list[Column]:
    return [c if isinstance(c, Column) else Column(c, "num" if c in right else "word") for c in columns]


def _wrap_words(words: list[str], width: int) -> str:
    lines: list[str] = []
    for w in words:
        if lines and len(lines[-1]) + 1 + len(w) <= width:
            lines[-1] += " " + w
        else:
            lines.append(w)
    return "\n".join(lines)


def _shorten_left(s: str, width: int) -> str:
    cell_len = _rich().cell_len
    if cell_len(s) <= width:
        return s
    tail = s[-max(width - 1, 0):]
    while tail and cell_len(tail) > width - 1:
        tail = tail[1:]
    return "…" + tail


class _Table:
    """A table laid out for the width it is printed at.

    Columns that hold only short values keep them whole on one line; the long columns (text,
    paths, ids) share what is left, the narrowest needs served first. A single row that does
    not fit across the terminal is shown as field/value pairs instead.
    """

    def __init__(self, title: str | None, columns: list[Column], rows: list[list[Any]]) -> None:
        self.title = title
        self.columns = columns
        self.rows = rows  # rich Text cells

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        cell_len = _rich().cell_len
        cols, rows = self.columns, self.rows
        if rows:  # a column no row fills says nothing on a terminal
            keep = [i for i in range(len(cols)) if any(r[i].plain for r in rows)] or list(range(len(cols)))
            cols = [cols[i] for i in keep]
            rows = [[r[i] for i in keep] for r in rows]
        avail = max(options.max_width - _GAP * (len(cols) - 1), len(cols))
        word = [max(map(len, c.header.split()), default=0) for c in cols]  # a header's longest word
        lo, hi = [], []
        for i, c in enumerate(cols):
            longest = max((cell_len(line) for r in rows for line in r[i].plain.split("\n")), default=0)
            hi.append(max(longest, cell_len(c.header)))
            lo.append(max(longest, word[i]) if c.kind in ("num", "word") else max(word[i], min(longest, _FLOOR)))
        if sum(lo) > avail:  # too wide: long words are cut (with …)
            cols = [Column(c.key, "id", c.header) if c.kind == "word" and lo[i] > _FLOOR else c for i, c in enumerate(cols)]
            lo = [min(lo[i], max(word[i], _FLOOR)) if c.kind == "id" else lo[i] for i, c in enumerate(cols)]
        if any(c.header for c in cols) and (sum(lo) > avail or (len(rows) == 1 and sum(hi) > avail)):
            # Still too wide (or one row that would be cut): each row as field/value lines.
            for n, row in enumerate(rows):
                if n:
                    yield text("")  # a blank line between rows
                yield self._record(cols, row, options.max_width, title=n == 0)
            return
        widths = lo[:]
        extra = avail - sum(lo)
        if extra > 0:  # max-min fair: each column up to its natural width, the smallest needs first
            order = sorted(range(len(cols)), key=lambda i: hi[i] - lo[i])
            for k, i in enumerate(order):
                give = min(hi[i] - lo[i], extra // (len(cols) - k))
                widths[i] += give
                extra -= give
        yield self._grid(cols, rows, widths)

    def _grid(self, cols: list[Column], rows: list[list[Any]], widths: list[int]) -> Any:
        Table, Text = _rich().Table, _rich().Text
        t = Table(title=Text(self.title) if self.title else None, title_justify="left", show_edge=False, pad_edge=False,
                  show_header=any(c.header for c in cols))
        for c, w in zip(cols, widths):
            t.add_column(Text(_wrap_words(c.header.split(), w)), justify="right" if c.kind == "num" else "left", width=w,
                         no_wrap=c.kind != "text", overflow="fold" if c.kind == "text" else "ellipsis")
        for r in rows:
            t.add_row(*(Text(_shorten_left(v.plain, w)) if c.kind == "path" else v for c, v, w in zip(cols, r, widths)))
        return t

    def _record(self, cols: list[Column], row: list[Any], width: int, *, title: bool = True) -> Any:
        names = [c.header for c in cols]
        key_width = min(max(map(len, names)), width // 2)
        pair = [Column("field", "text", ""), Column("value", "text", "")]
        grid = _Table(self.title if title else None, pair, [])._grid
        return grid(pair, [[text(n), v] for n, v in zip(names, row)], [key_width, max(width - key_width - _GAP, 1)])


def record(title: str | None, pairs: Iterable[tuple[str, Any]]) -> Any:
    """Field/value pairs, a line each; the values wrap between words."""
    return table(title, [Column("field", "word", ""), Column("value", "text", "")], pairs)


def table(title: str | None, columns: Sequence[str | Column], rows: Iterable[Sequence[Any]], *, right: Sequence[str] = ()) -> Any:
    """A table of values, never markup: a cell shows `plain(value)`, or a rich Text as built."""
    Text = _rich().Text
    cols = _columns(columns, right)
    return _Table(None if title is None else plain(title), cols,
                  [[v if isinstance(v, Text) else text(grouped(v) if c.kind == "num" else v) for v, c in zip(row, cols)]
                   for row in rows])


def grouped(value: Any) -> Any:
    """A whole number with its thousands grouped (`2,454`), as every table shows them; JSON stays raw."""
    return f"{value:,}" if type(value) is int else value


def show(*renderables: Any) -> None:
    """Print tables and plain strings on stdout; a string is printed as it is, never as markup."""
    c = console()
    for r in renderables:
        c.print(text(r) if isinstance(r, str) else r)


def form(as_json: bool) -> str:
    """The one rule for what a command prints: "json" (--json: one document), "table" (a
    terminal: tables and text, never markup) or "lines" (a pipe: JSON Lines)."""
    return "json" if as_json else "table" if stdout_tty() else "lines"


def emit(doc: Any, *, as_json: bool, show: Callable[[Any], None], lines: Iterable[Any] | None = None) -> None:
    """A command's one document: --json prints it whole, a terminal gets SHOW(doc), a pipe
    JSON Lines (LINES, its rows, when given; else the document on one line)."""
    how = form(as_json)
    if how == "json":
        write_json(doc)
    elif how == "table":
        show(doc)
    else:
        write_lines([doc] if lines is None else lines)


def emit_rendered(*, as_json: bool, show: Callable[[], None], document: Callable[[], Any], rendered: Callable[[], dict[str, bytes]]) -> None:
    """`emit` for an answer whose pipe forms exist as bytes (usage's cached answer): a pipe
    gets RENDERED()[form] without a JSON library; a terminal gets SHOW() or, with --json,
    DOCUMENT() indented."""
    how = form(as_json)
    if how == "table":
        show()
    elif stdout_tty():
        write_json(document())
    else:
        write_bytes(rendered()[how])


def rows_out(rows: Iterable[dict[str, Any]], columns: Sequence[str | Column], *, as_json: bool, key: str = "rows", title: str | None = None,
             right: Sequence[str] = (), show_rows: Callable[[list[dict[str, Any]]], None] | None = None) -> int:
    """A command's rows, streamed: --json `{KEY: [row, …]}`, a table on a terminal (or
    SHOW_ROWS(rows) when given), JSON Lines in a pipe. Returns how many rows."""
    how = form(as_json)
    if how == "json":
        return write_json_array(key, rows)
    if how == "table":
        materialised = list(rows)
        if show_rows is not None:
            show_rows(materialised)
        else:
            show_table(materialised, columns, title=title, right=right)
        return len(materialised)
    return write_lines(rows)


def show_table(rows: Iterable[dict[str, Any]], columns: Sequence[str | Column], *, title: str | None = None, right: Sequence[str] = ()) -> None:
    """Rows (dicts) as a table on stdout, a column each of COLUMNS' keys."""
    cols = _columns(columns, right)
    show(table(title, cols, ([r.get(c.key) for c in cols] for r in rows)))


def stderr_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_iter(items: Iterable[Any], *, label: str, total: int | None = None) -> Iterator[Any]:
    """Yield items, showing a bar on stderr only when stderr is a terminal (never in pipes or cron)."""
    if not stderr_tty():
        yield from items
        return
    p = _rich().progress
    with p.Progress(p.TextColumn("{task.description}"), p.BarColumn(), p.MofNCompleteColumn(), p.TimeElapsedColumn(), console=console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        for item in items:
            yield item
            bar.advance(task)


class ByteProgress:
    """A bytes bar for one large file on a terminal's stderr; a no-op elsewhere."""

    MIN_BYTES = 64 << 20  # smaller files finish before a bar would help

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> ByteProgress:
        if stderr_tty() and self.total >= self.MIN_BYTES:
            p = _rich().progress
            self._bar = p.Progress(p.TextColumn("{task.description}"), p.BarColumn(), p.DownloadColumn(), p.TransferSpeedColumn(), console=console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    @property
    def callback(self) -> Callable[[int], None] | None:
        if self._bar is None:
            return None
        return lambda done: self._bar.update(self._task, completed=done)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
