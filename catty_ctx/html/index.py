"""`report ROOT -o DIR`: a page per session and an index.html listing them, sortable.

Each session's page is written as it is built (temp + rename, so a reader never sees half a
page), and the index last. An unreadable session still gets its page and its row, both
saying what is wrong. Sessions are built in forked workers when a second CPU is there.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import xxhash

from ..errors import CattyError, DataError, WriteError
from ..fleet.runner import Forked, RootRun
from ..fleet.workers import can_fork, usable_cpus
from ..session.files import replace_file
from ..sources import root_sessions
from .assets import CSP, CSS, JS
from .data import gather_path
from .fmt import esc, money, num
from .page import render

INDEX_NAME = "index.html"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(root: Path, directory: Path) -> str:
    """A stable file name for a session's page: its path under ROOT, made safe, plus a short hash."""

    rel = os.path.relpath(directory, root)
    slug = _UNSAFE.sub("_", rel).strip("._")[:80] or "session"
    return f"{slug}-{xxhash.xxh3_64_hexdigest(rel.encode('utf-8', 'surrogateescape'))[:8]}.html"


def write_file(path: Path, data: bytes) -> None:
    """temp + rename beside PATH; any failure is a WriteError (exit 73)."""

    try:
        replace_file(path, data, durable=False)
        os.chmod(path, 0o666 & ~_umask())  # a page is for sharing: the usual mode, not the temp file's 0600
    except OSError as exc:
        raise WriteError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def prepare_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"{out}: cannot create ({exc.strerror or exc})") from None
    if not out.is_dir():
        raise WriteError(f"{out}: not a folder")
    if not os.access(out, os.W_OK | os.X_OK):
        raise WriteError(f"{out}: cannot write here (permission denied)")


def build_one(session: Any, *, root: str, out: str) -> dict[str, Any]:
    """Build and write one session's page (a catty session's folder or a native session);
    return its index row (run in a worker too). A page that cannot be written is a WriteError."""

    directory = str(session)
    rep = gather_path(session)
    name = page_name(Path(root), Path(directory))
    html = render(rep, ref=directory, index_href=INDEX_NAME)
    write_file(Path(out) / name, html.encode("utf-8", "surrogateescape"))
    return {
        "page": name,
        "path": os.path.relpath(directory, root),
        "session_id": rep.session_id,
        "source": rep.source or ("catty" if rep.readable else None),
        "model": rep.model,
        "turns": rep.turns,
        "tokens": rep.tokens,
        "percent": rep.percent,
        "compactions": len(rep.compactions),
        "problems": sum(rep.problems.values()),
        "problem_kinds": ", ".join(k.replace("_", " ") for k in rep.problems),
        "cost_usd": rep.cost,
        "error": "; ".join(rep.errors) or None,
    }


def index_html(rows: Iterable[dict[str, Any]], *, root: str) -> str:
    cols = [  # label, sort key (index.html#sort=KEY or #sort=-KEY opens sorted), string or number
        ("session", "session", "s"), ("source", "source", "s"), ("model", "model", "s"), ("turns", "turns", "n"),
        ("tokens", "tokens", "n"), ("% window", "percent", "n"), ("compactions", "compactions", "n"),
        ("problems", "problems", "n"), ("cost", "cost", "n"),
    ]
    head = "".join(
        f'<th{" class=n" if t == "n" else ""}><button type="button" data-key="{k}" data-type="{t}">{esc(c)}</button></th>' for c, k, t in cols
    )
    body = []
    n = 0
    for r in rows:
        n += 1
        label = esc(r["session_id"] or r["path"])
        link = f'<a href="{esc(r["page"])}">{label}</a><div class="mono" style="color:#5f6b76">{esc(r["path"])}</div>'
        if r["error"]:
            link += f'<div class="error">cannot read: {esc(r["error"])}</div>'
        problems = num(r["problems"]) + (f" <span class=\"error\">({esc(r['problem_kinds'])})</span>" if r["problem_kinds"] else "")
        if r["error"]:
            problems = '<span class="error">unreadable</span>'
        cost = r["cost_usd"]
        cells = [
            f'<td data-v="{esc(r["session_id"] or r["path"])}">{link}</td>',
            f"<td>{esc(r['source'] or '')}</td>",
            f"<td>{esc(r['model'] or '')}</td>",
            f'<td class="n" data-v="{r["turns"]}">{num(r["turns"])}</td>',
            f'<td class="n" data-v="{r["tokens"]}">{num(r["tokens"])}</td>',
            f'<td class="n" data-v="{r["percent"]}">{r["percent"]:g}%</td>',
            f'<td class="n" data-v="{r["compactions"]}">{num(r["compactions"])}</td>',
            f'<td class="n" data-v="{-1 if r["error"] else r["problems"]}">{problems}</td>',
            f'<td class="n" data-v="{"" if cost is None else cost}">{esc(money(cost)) if cost is not None else ""}</td>',
        ]
        body.append('<tr data-session="' + esc(r["path"]) + '">' + "".join(cells) + "</tr>")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="generator" content="catty-ctx report">'
        f"<title>catty-ctx report: {esc(root)}</title><style>{CSS}</style></head><body>"
        f'<header class="top"><h1>{esc(root)}</h1><p>{n:,} sessions; click a column to sort.</p></header><main>'
        f'<section id="sessions"><div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(body)}</tbody></table></div></section></main><script>{JS}</script></body></html>\n'
    )


class Site(NamedTuple):
    """What `write_root` wrote: the index rows (an unreadable session's says so) and the exit by
    the rule of a ROOT (docs/spec.md#a-root-of-sessions)."""

    rows: list[dict[str, Any]]
    exit_code: int


def write_root(root: Path, out: Path, *, sessions: Iterable[Any] | None = None, progress: Callable[[Iterator[Any]], Iterator[Any]] | None = None,
               jobs: int | None = None, on_error: Callable[[Any, CattyError], None] | None = None) -> Site:
    """Every session under ROOT into OUT (a page each and index.html, last), as a `RootRun` in
    JOBS forked processes (by default, when a second CPU is there and the ROOT is worth it).

    An unreadable session still gets its page and its row, and counts as bad data; a page that
    cannot be written leaves its session out of the index. Each failure goes to ON_ERROR (the
    others go on); without it, the first is raised."""

    prepare_dir(out)
    found = list(sessions if sessions is not None else root_sessions(root, allow_empty=True))
    workers = jobs if jobs is not None else (usable_cpus() if can_fork() and len(found) > 8 else 1)

    def unreadable(row: dict[str, Any]) -> CattyError | None:
        return DataError(f"{row['error']} (page written: {out / row['page']})") if row["error"] else None

    run = RootRun(build_one, [d if not isinstance(d, Path) else str(d) for d in found], Forked(workers) if workers > 1 else None,
                  on_error=on_error, progress=progress, failure=unreadable, root=str(root), out=str(out))
    rows = list(run)
    write_file(out / INDEX_NAME, index_html(rows, root=str(root)).encode("utf-8", "surrogateescape"))
    return Site(rows, run.exit_code())
