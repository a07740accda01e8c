"""One session's report page: a single HTML document with its CSS, script and chart inline.

Sections (their ids are the contract): #summary, #timeline, #view, #compactions, #usage.
Session text is escaped everywhere (`fmt.esc`); a Content-Security-Policy forbids every
fetch, so the page works from a file, offline, mailed or attached to a bug report. Long
views are cut into pages of blocks (every item stays in the document, one element with
`data-seq` each); large texts keep their head and tail in view and the middle collapsed.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from shlex import quote
from typing import Any

import orjson

from .assets import CSP, CSS, JS
from .data import Report
from .fmt import esc, money, num, script_json
from .fmt import text as esc_text
from .svg import timeline_svg, y_max

PAGE_BLOCKS = 120  # view blocks (an item, or an assistant with its results) per page
CLIP_OVER = 1_600  # a text longer than this shows its head and tail ...
HEAD, TAIL = 900, 400
MIDDLE_MAX = 12_000  # ... and its middle, collapsed, up to this many characters (beyond: cut)
# The page stays small whatever the view holds: past TEXT_BUDGET characters of item text the
# heads and tails shrink in proportion and collapsed middles stop once MIDDLE_BUDGET is
# spent; a page still over PAGE_BYTES is built again with everything squeezed by half.
TEXT_BUDGET = 2_000_000
MIDDLE_BUDGET = 1_000_000
PAGE_BYTES = 4_500_000
SQUEEZES = 4


class _Clipper:
    """Cuts long texts into head, collapsed middle (while the budget lasts) and tail."""

    def __init__(self, texts_chars: int, squeeze: float = 1.0) -> None:
        scale = min(1.0, TEXT_BUDGET / texts_chars) if texts_chars else 1.0
        scale = max(0.15, scale) * squeeze
        self.over, self.head, self.tail = max(60, int(CLIP_OVER * scale)), max(40, int(HEAD * scale)), max(20, int(TAIL * scale))
        self.middle_left = MIDDLE_BUDGET if scale == 1.0 else 0

    def clip(self, text: str) -> str:
        if len(text) <= self.over:
            return f"<pre>{esc_text(text)}</pre>"
        head, middle, tail = text[: self.head], text[self.head : -self.tail], text[-self.tail :]
        if len(middle) <= MIDDLE_MAX and len(middle) <= self.middle_left:
            self.middle_left -= len(middle)
            hidden = f"<details><summary>… {len(middle):,} more characters</summary><pre>{esc_text(middle)}</pre></details>"
        else:
            hidden = f'<p class="cut">… {len(middle):,} characters cut</p>'
        return f'<div class="clip"><pre>{esc_text(head)}</pre>{hidden}<pre>{esc_text(tail)}</pre></div>'


def render(rep: Report, *, ref: str = "SESSION", index_href: str | None = None) -> str:
    """The whole page as a string; REF is how commands in the page name the session."""
    head = "".join(_head(rep, index_href)) + "".join(_summary(rep)) + "".join(_timeline(rep))
    tail = "".join(_compactions(rep)) + "".join(_usage(rep)) + f"</main><script>{JS}</script></body></html>\n"
    squeeze = 1.0
    for _ in range(SQUEEZES):
        view = "".join(_view(rep, ref, squeeze))
        if len(head) + len(view) + len(tail) <= PAGE_BYTES:
            break
        squeeze /= 2
    return head + view + tail


def _head(rep: Report, index_href: str | None) -> Iterator[str]:
    title = rep.session_id or rep.path
    yield '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
    yield f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    yield '<meta name="viewport" content="width=device-width, initial-scale=1">'
    yield '<meta name="generator" content="catty-ctx report">'
    yield f"<title>catty-ctx report: {esc(title)}</title><style>{CSS}</style></head><body>"
    yield f'<header class="top"><h1>{esc(title)}</h1><nav class="sections">'
    if index_href:
        yield f'<a href="{esc(index_href)}">↑ all sessions</a>'
    for sid, label in (("summary", "Summary"), ("timeline", "Timeline"), ("view", "View"), ("compactions", "Compactions"), ("usage", "Usage")):
        yield f'<a href="#{sid}">{label}</a>'
    yield "</nav></header><main>"


# -- #summary -------------------------------------------------------------------------------


def _summary(rep: Report) -> Iterator[str]:
    yield '<section id="summary"><h2>Summary</h2>'
    for err in rep.errors:
        yield f'<p class="error">cannot read this session: {esc(err)}</p>'
    facts: list[tuple[str, str]] = [
        ("session", esc(rep.session_id or "unknown")),
        ("path", f'<span class="mono">{esc(rep.path)}</span>'),
        ("source agent", esc(rep.source or "catty")),
        *([("source file", f'<span class="mono">{esc(rep.origin["path"])}</span>'), ("cwd", esc(rep.origin.get("cwd") or "unknown")),
           ("title", esc(rep.origin.get("title") or ""))] if rep.origin else []),
        ("model", esc(rep.model or "unknown")),
        ("window", f"{num(rep.window)} tokens"),
        ("events", num(rep.events)),
        ("turns", num(rep.turns)),
        ("view items", num(len(rep.items))),
    ]
    hot = " hot" if rep.percent >= rep.threshold else ""
    width = min(100.0, rep.percent)
    facts.append(("tokens now", f'{num(rep.tokens)} of {num(rep.window)} ({rep.percent:g}% of the window)<div class="meter{hot}"><span style="width:{width:.1f}%"></span></div>'))
    facts.append(("fingerprint", f'<span class="mono">{esc(rep.fp)}</span>'))
    if rep.problems:
        found = ", ".join(f"{esc(k.replace('_', ' '))}: {v}" for k, v in rep.problems.items())
        facts.append(("problems", f'<span class="error">{found}</span> (<code>catty-ctx repair</code> fixes them)'))
    elif not rep.errors:
        facts.append(("problems", '<span class="ok">none</span> (repair --check)'))
    facts.append(("cost", money(rep.cost) if rep.usage_totals else "unknown"))
    yield '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
    if rep.problem_actions:
        cols = ["action", "reason", "seq", "target_seq", "call_id", "line", "problem"]
        yield "<h3>repair --check</h3>" + _table(cols, ([a.get(c) for c in cols] for a in rep.problem_actions), right={"seq", "target_seq", "line"})
    yield "</section>"


# -- #timeline ------------------------------------------------------------------------------


def _timeline(rep: Report) -> Iterator[str]:
    yield '<section id="timeline"><h2>Timeline</h2>'
    if not rep.points and rep.errors:
        yield '<p class="omitted">no timeline: the session could not be read.</p></section>'
        return
    what = "the estimate of the view (no usage events in this session)" if rep.estimated else "each main-agent usage event"
    yield f"<p>Context tokens per provider request ({num(len(rep.points))} requests: {what}); turns on the x axis.</p>"
    yield (
        '<p class="legend"><span><i style="background:#0b62c4"></i>context tokens</span>'
        + ('' if rep.estimated else '<span><i style="background:#2e7d32"></i>cached share of the input (the panel below, 0-100 %)</span>')
        + f'<span><i style="background:#c62828"></i>compaction ({len(rep.compactions)})</span>'
        f'<span><i style="background:#7b1fa2"></i>prune batch ({len(rep.prunes)})</span>'
        f'<span><i style="background:#ef6c00"></i>two-pass prefire ({len(rep.prefires)})</span></p>'
    )
    yield f'<div class="scroll">{timeline_svg(rep)}</div>'
    yield '<p class="readout" id="readout" aria-live="polite">Point at the chart, or focus it and use the arrow keys, to read a request.</p>'
    if rep.other_compactions:
        yield f"<p>{num(rep.other_compactions)} subagent compaction(s) are not drawn (main agent only).</p>"
    models = sorted({p.model for p in rep.points})
    index = {m: i for i, m in enumerate(models)}
    data = {
        "window": max(rep.window, 1),
        "ymax": y_max(rep),
        "estimated": rep.estimated,
        "models": models,
        "points": [[p.seq, p.turn, p.context, p.cached, p.prompt, p.output, index[p.model]] for p in rep.points],
    }
    yield f'<script type="application/json" id="timeline-data">{script_json(data)}</script></section>'


# -- #view ----------------------------------------------------------------------------------


def _view(rep: Report, ref: str, squeeze: float) -> Iterator[str]:
    yield '<section id="view"><h2>View</h2>'
    if rep.errors and not rep.items:
        yield '<p class="omitted">no view: the session could not be read.</p></section>'
        return
    total = sum(r["tokens"] for r in rep.items)
    yield (f"<p>The items a provider request would hold now: {num(len(rep.items))} items, {num(total)} estimated tokens "
           "(each item's bar: its tokens against the largest item's). A long text shows its head and tail; "
           f"<code>catty-ctx inspect {esc(quote(ref))} --seq N</code> prints item N in full.</p>")
    biggest = max((r["tokens"] for r in rep.items), default=0) or 1
    chars = sum(len(str(r["item"].get("output") or r["item"].get("text") or "")) for r in rep.items)
    blocks = list(_blocks(rep, ref, biggest, _Clipper(chars, squeeze)))
    pages = [blocks[i : i + PAGE_BLOCKS] for i in range(0, len(blocks), PAGE_BLOCKS)] or [[]]
    if len(pages) > 1:
        yield ('<div class="pager" id="pager" hidden><button type="button" class="prev">← previous</button>'
               '<span class="where"></span><button type="button" class="next">next →</button>'
               '<button type="button" class="all">show all</button></div>')
    for n, page in enumerate(pages):
        yield f'<div class="page" data-page="{n}">' + "".join(page) + "</div>"
    yield "</section>"


def _blocks(rep: Report, ref: str, biggest: int, clipper: _Clipper) -> Iterator[str]:
    """An item each, except an assistant's tool calls, which carry their results beside them."""
    rows = rep.items
    i = 0
    while i < len(rows):
        row = rows[i]
        item = row["item"]
        calls = item.get("tool_calls") if item.get("role") == "assistant" else None
        if not calls:
            yield _item(rep, row, ref, biggest, clipper)
            i += 1
            continue
        results: dict[str, dict[str, Any]] = {}
        j = i + 1
        wanted = {c.get("call_id") for c in calls}
        while j < len(rows) and rows[j]["item"].get("role") == "tool" and rows[j]["item"].get("call_id") in wanted and rows[j]["item"].get("call_id") not in results:
            results[rows[j]["item"]["call_id"]] = rows[j]
            j += 1
        pairs = []
        for c in calls:
            res = results.get(c.get("call_id"))
            right = _item(rep, res, ref, biggest, clipper) if res is not None else '<p class="omitted">no result in the view</p>'
            pairs.append(f'<div class="pair"><div class="call">{_call(c, clipper)}</div>{right}</div>')
        yield _item(rep, row, ref, biggest, clipper, inner="".join(pairs))
        i = j


def _item(rep: Report, row: dict[str, Any], ref: str, biggest: int, clipper: _Clipper, inner: str = "") -> str:
    item = row["item"]
    role = str(item.get("role", ""))
    seq = item.get("seq")
    seq_attr = str(seq) if isinstance(seq, int) else ""
    classes = ["item", esc(role)]
    badges = []
    if item.get("synthetic"):
        classes.append("synthetic")
        badges.append(f'<i class="badge syn">synthetic: {esc(item["synthetic"])}</i>')
    if role == "tool" and item.get("is_error"):
        classes.append("failed")
        badges.append('<i class="badge err">error</i>')
    if item.get("pruned"):
        badges.append(f'<i class="badge">pruned: {esc(item["pruned"])}</i>')
    where = f"seq {seq}" if isinstance(seq, int) else "no seq"
    call = f' <code>{esc(item.get("call_id"))}</code>' if role == "tool" else ""
    head = (
        f'<p class="hd"><b>{esc(role)}</b> #{row["index"]} · {where}{call}{"".join(badges)}'
        f'<span class="tok">{num(row["tokens"])} tok<s style="--w:{row["tokens"] * 100 / biggest:.1f}%"></s></span></p>'
    )
    text = item.get("output") if role == "tool" else item.get("text")
    body = clipper.clip(str(text)) if text else ""
    extra = ""
    handle = item.get("blob")
    if isinstance(handle, str):
        size = rep.blob_sizes.get(handle)
        known = f"{num(size)} bytes" if size is not None else "size unknown here"
        extra += f'<p class="blob">stored in full as blob <code>{esc(handle)}</code> ({known}): <code>catty-ctx blob {esc(quote(ref))} {esc(handle)}</code></p>'
    images = item.get("images")
    if images:
        extra += f'<p class="blob">{len(images)} image(s), 765 tokens each</p>'
    return f'<article class="{" ".join(classes)}" data-seq="{seq_attr}" id="i{row["index"]}">{head}{body}{extra}{inner}</article>'


def _call(call: dict[str, Any], clipper: _Clipper) -> str:
    args = call.get("args")
    text = args if isinstance(args, str) else orjson.dumps(args, option=orjson.OPT_INDENT_2).decode()
    return f'<p class="hd"><b>{esc(call.get("name"))}</b> <code>{esc(call.get("call_id"))}</code></p>{clipper.clip(text)}'


# -- #compactions ---------------------------------------------------------------------------


def _compactions(rep: Report) -> Iterator[str]:
    yield '<section id="compactions"><h2>Compactions</h2>'
    if rep.compactions:
        cols = ["seq", "through_seq", "tokens_before", "tokens_after", "mode", "summarizer", "trigger", "artifact", "segment"]
        yield _table(cols, ([c.get(k) for k in cols] for c in rep.compactions), right={"seq", "through_seq", "tokens_before", "tokens_after"})
    else:
        yield "<p>No compaction in this session.</p>" if not rep.errors else '<p class="omitted">not available: the session could not be read.</p>'
    yield "<h3>Segments index</h3>"
    if rep.segments:
        cols = ["segment", "file", "seq_from", "seq_to", "turns", "bytes", "keywords"]
        rows = ([s.get(k) if k != "keywords" else ", ".join(map(str, s.get("keywords") or [])) for k in cols] for s in rep.segments)
        yield _table(cols, rows, right={"segment", "seq_from", "seq_to", "turns", "bytes"})
    else:
        yield "<p>No archived segment (compact --mode segments writes them).</p>"
    yield "</section>"


# -- #usage ---------------------------------------------------------------------------------


_PLAIN = {"seq", "through_seq", "target_seq", "line", "segment", "seq_from", "seq_to"}
_USAGE_COLS = ["calls", "input", "output", "cache_read", "cache_write", "reasoning", "cost_usd"]


def _usage(rep: Report) -> Iterator[str]:
    yield '<section id="usage"><h2>Usage</h2>'
    if not rep.usage_totals:
        yield "<p>No usage recorded.</p></section>" if not rep.errors else '<p class="omitted">not available: the session could not be read.</p></section>'
        return
    for key, title, rows in (("model", "By model", rep.usage_by_model), ("agent", "By agent (main vs subagents)", rep.usage_by_agent)):
        yield f"<h3>{title}</h3>"
        cols = [key, *_USAGE_COLS]
        body = [[r.get(key), *(_usage_cell(r, c) for c in _USAGE_COLS)] for r in rows]
        body.append(["total", *(_usage_cell(rep.usage_totals, c) for c in _USAGE_COLS)])
        yield _table(cols, body, right=set(_USAGE_COLS), raw={"cost_usd"})
    rows_all = [*rep.usage_by_model, rep.usage_totals]
    if any(r.get("cost_usd") is None or r.get("partial") for r in rows_all):
        unknown = sorted({str(r.get("model")) for r in rep.usage_by_model if r.get("cost_usd") is None or r.get("partial")})
        yield (f'<p class="note" id="unpriced">* No price is known for {esc(", ".join(unknown)) or "some calls"}: their calls are '
               "counted in tokens and left out of the cost (a price file, <code>usage --prices FILE</code>, covers private models).</p>")
    yield "</section>"


def _usage_cell(row: dict[str, Any], col: str) -> Any:
    if col == "cost_usd":
        if row.get("cost_usd") is None:
            return 'unpriced<a href="#unpriced">*</a>'
        return esc(money(row.get("cost_usd"))) + ('<a href="#unpriced">*</a> (partial)' if row.get("partial") else "")
    return row.get(col)


# Column headers as a reader says them (the JSON keys stay as they are in --json and data-*).
HEADERS = {"seq": "seq", "through_seq": "through seq", "tokens_before": "tokens before", "tokens_after": "tokens after",
           "seq_from": "from seq", "seq_to": "to seq", "cache_read": "cache read", "cache_write": "cache write", "cost_usd": "cost (USD)",
           "target_seq": "target seq"}


def header(key: str) -> str:
    return HEADERS.get(key, key.replace("_", " "))


def _table(cols: list[str], rows: Iterable[Iterable[Any]], *, right: AbstractSet[str] = frozenset(), raw: AbstractSet[str] = frozenset()) -> str:
    head = "".join(f'<th class="n">{esc(header(c))}</th>' if c in right else f"<th>{esc(header(c))}</th>" for c in cols)
    body = []
    for row in rows:
        cells = []
        for c, v in zip(cols, row):
            if c in raw:
                shown = v
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                shown = str(v) if c in _PLAIN else num(v)  # a seq is a name, not an amount
            else:
                shown = esc(v if not isinstance(v, (dict, list)) else orjson.dumps(v).decode())
            cells.append(f'<td class="n">{shown}</td>' if c in right else f"<td>{shown}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
