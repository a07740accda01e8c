"""`catty-ctx report`: a session's context lifecycle as one self-contained, offline HTML page.

data.py gathers what a page shows from the library (the view's fold with a timeline tap,
repair --check, the usage ledger, the segments index); svg.py draws the timeline by hand;
page.py renders the page, index.py a ROOT's pages and their sortable index.html. Session
text is escaped everywhere and the page fetches nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..session.store import Session
from .data import gather, gather_path
from .index import write_root as _write_root
from .page import render

if TYPE_CHECKING:
    from .data import Report
    from .index import Site


def build_report(target: str | Path | Any) -> Report:
    """The report data of a session (a path, or an open Session); never raises for bad input."""

    if isinstance(target, Session):
        return gather(target)
    return gather_path(target)


def render_page(target: str | Path | Any, *, ref: str | None = None) -> str:
    """One session's page as a string (REF names the session in the commands the page shows)."""

    rep = build_report(target)
    return render(rep, ref=ref or (rep.path if not str(rep.path).startswith("<") else "SESSION"))


def write_root(root: str | Path, out: str | Path, **kw: Any) -> Site:
    """A page per session under ROOT and OUT/index.html; returns the index rows and the exit (`index.write_root`)."""

    return _write_root(Path(root), Path(out), **kw)
