"""One output layer for every command: rich on a terminal, JSON Lines in a pipe, --json one document.

Rows stream out as they are produced; rich is imported only when a terminal will show it.
"""
from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing and orjson load where used: `usage` prints a cached answer without them
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Iterator, Sequence

_NL = b"\n"


def stdout_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _out() -> Any:
    return sys.stdout.buffer


def json_bytes(doc: Any, *, pretty: bool = False) -> bytes:
    """One JSON document as printed: indented for a terminal, one line for a pipe."""
    import orjson

    return orjson.dumps(doc, option=(orjson.OPT_INDENT_2 if pretty else 0) | orjson.OPT_NON_STR_KEYS) + _NL


def lines_bytes(rows: Iterable[Any]) -> bytes:
    """Rows as JSON Lines, as `write_lines` prints them."""
    import orjson

    dumps, opt = orjson.dumps, orjson.OPT_NON_STR_KEYS
    return b"".join(dumps(row, option=opt) + _NL for row in rows)


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
    import orjson

    out = _out()
    n = 0
    for row in rows:
        out.write(orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS) + _NL)
        n += 1
    out.flush()
    return n


def write_json_array(key: str, rows: Iterable[Any], extra: dict[str, Any] | None = None) -> int:
    """`{"key": [row, …]}` written row by row, never built whole in memory."""
    import orjson

    out = _out()
    out.write(b'{"' + key.encode() + b'":[')
    n = 0
    for row in rows:
        if n:
            out.write(b",")
        out.write(orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS))
        n += 1
    out.write(b"]")
    for k, v in (extra or {}).items():
        out.write(b"," + orjson.dumps(k) + b":" + orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS))
    out.write(b"}\n")
    out.flush()
    return n


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, right: Sequence[str] = ()) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for col in columns:
        t.add_column(col, justify="right" if col in right else "left", overflow="fold")
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    return t


def show(*renderables: Any) -> None:
    c = console()
    for r in renderables:
        c.print(r)


def rows_out(rows: Iterable[dict[str, Any]], columns: Sequence[str], *, as_json: bool, key: str = "rows", title: str | None = None, right: Sequence[str] = ()) -> int:
    """The standard row output: --json document, rich table on a terminal, else JSON Lines."""
    if as_json:
        return write_json_array(key, rows)
    if stdout_tty():
        materialised = list(rows)
        show(table(title, columns, ([r.get(c) for c in columns] for r in materialised), right=right))
        return len(materialised)
    return write_lines(rows)


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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console(stderr=True), transient=True) as bar:
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

    def __enter__(self) -> "ByteProgress":
        if stderr_tty() and self.total >= self.MIN_BYTES:
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=console(stderr=True), transient=True)
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
