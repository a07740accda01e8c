"""The timeline chart: hand-written SVG, drawn at build time, readable with scripts off.

x is the provider request (every main-agent `usage` event, or the estimate at each assistant
message when a session has none), y the context tokens of that request, scaled to the data:
the window and the compaction threshold are lines when they fall in range, and a note says
where they are when the session stays far below them. The cached share of each request's input
has its own small panel under the chart, on its own 0-100 % scale. Compactions, prune batches and two-pass prefires are marker elements
carrying `data-compaction`, `data-prune` and `data-prefire`, each with a <title> that a
browser shows on hover without any script. Every request is drawn: the chart is never cut.
"""
from __future__ import annotations

from collections.abc import Callable
from html import escape

from .data import Report
from .fmt import compact_number, num

W, H = 1000, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 930, 24, 292
CACHE_TOP, CACHE_BOTTOM = 330, 392  # the cached-share panel, under the turn labels
LABELS_MAX = 12  # turn labels on the x axis
NEAR = 0.5  # the axis spans the window once the context reaches this share of the threshold


def y_max(rep: Report) -> float:
    """The top of the y axis: the window (with a margin) once the context comes near the
    threshold, else a round number above the largest context, so a session that uses 2 % of
    its window is not a flat line at the bottom."""
    window = max(rep.window, 1)
    top = max((p.context for p in rep.points), default=0)
    if top >= window * rep.threshold / 100 * NEAR or top == 0:
        return max(window, top) * 1.06
    return _nice(top * 1.15)


def _nice(v: float) -> float:
    """V rounded up to 1, 2, 2.5 or 5 times a power of ten."""
    power = 10 ** max(0, len(str(int(v))) - 1)
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * power:
            return m * power
    return 10 * power


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def timeline_svg(rep: Report) -> str:
    """The chart as one <svg> element."""
    pts = rep.points
    n = len(pts)
    window = max(rep.window, 1)
    ymax = y_max(rep)
    plot_w, plot_h = RIGHT - LEFT, BOTTOM - TOP
    step = plot_w / max(n, 1)

    def x(i: float) -> float:
        return LEFT + (i + 0.5) * step

    def y(v: float) -> float:
        return BOTTOM - v / ymax * plot_h

    out = [
        f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-labelledby="tl-title" tabindex="0" '
        f'data-left="{LEFT}" data-right="{RIGHT}" data-top="{TOP}" data-bottom="{BOTTOM}">',
        f'<title id="tl-title">Context tokens per request: {n:,} requests, window {num(rep.window)}</title>',
    ]
    # The y grid in quarters of the axis, labelled in tokens.
    for q in (0, 0.25, 0.5, 0.75, 1.0):
        v = (window if ymax > window else ymax) * q
        yy = _f(y(v))
        out.append(f'<line class="grid" x1="{LEFT}" x2="{RIGHT}" y1="{yy}" y2="{yy}"/>')
        out.append(f'<text class="ax" x="{LEFT - 6}" y="{yy}" text-anchor="end" dominant-baseline="middle">{compact_number(v)}</text>')
    thr = rep.window * rep.threshold / 100
    for value, cls, label, tip in ((window, "window", f"window {num(rep.window)}", f"window {num(rep.window)} tokens"),
                                   (thr, "threshold", f"threshold {_f(rep.threshold)}%",
                                    f"compaction threshold {_f(rep.threshold)}%: {num(int(thr))} tokens")):
        if value <= ymax:
            yy = _f(y(value))
            out.append(f'<line class="{cls}" x1="{LEFT}" x2="{RIGHT}" y1="{yy}" y2="{yy}"><title>{tip}</title></line>')
            out.append(f'<text class="lbl{" thr" if cls == "threshold" else ""}" x="{RIGHT - 4}" y="{_f(y(value) - 5)}" text-anchor="end">{label}</text>')
    if thr > ymax:  # far below: say where the lines would be instead of flattening the data
        top = max((p.context for p in pts), default=0)
        out.append(f'<text class="lbl off-scale" x="{RIGHT - 4}" y="{TOP + 10}" text-anchor="end">window {num(rep.window)} and threshold '
                   f'{_f(rep.threshold)}% ({num(int(thr))}) are off this scale: the context peaks at {num(top)} tokens '
                   f'({_f(top * 100 / window)}% of the window)</text>')
    if n:
        ctx = " ".join(f"{_f(x(i))},{_f(y(p.context))}" for i, p in enumerate(pts))
        out.append(f'<polygon class="area" points="{_f(x(0))},{BOTTOM} {ctx} {_f(x(n - 1))},{BOTTOM}"/>')
        out.append(f'<polyline class="ctx" points="{ctx}"/>')
        if not rep.estimated:
            out.extend(_cache_panel(rep, x))
    else:
        out.append(f'<text class="lbl" x="{(LEFT + RIGHT) / 2}" y="{(TOP + BOTTOM) / 2}" text-anchor="middle">no provider request in this session</text>')
    out.extend(_turn_labels(rep, x))
    out.append(f'<line class="axis" x1="{LEFT}" x2="{RIGHT}" y1="{BOTTOM}" y2="{BOTTOM}"/>')
    out.append(f'<text class="ax" x="{(LEFT + RIGHT) / 2}" y="{H - 4}" text-anchor="middle">provider request (turn)</text>')
    out.extend(_markers(rep, x))
    # Moved by the page's script to the request under the pointer or the keyboard focus.
    out.append(f'<line class="cursor" x1="0" x2="0" y1="{TOP}" y2="{BOTTOM}" visibility="hidden"/>')
    out.append('<circle class="dot" r="4" cx="0" cy="0" visibility="hidden"/>')
    out.append("</svg>")
    return "".join(out)


def _cache_panel(rep: Report, x: Callable[[float], float]) -> list[str]:
    """The cached share of each request's input, in its own strip with its own 0-100 % scale."""
    h = CACHE_BOTTOM - CACHE_TOP
    out = [f'<rect class="panel" x="{LEFT}" y="{CACHE_TOP}" width="{RIGHT - LEFT}" height="{h}"/>',
           f'<text class="ax cache-ax" x="{LEFT - 6}" y="{CACHE_TOP}" text-anchor="end" dominant-baseline="middle">100%</text>',
           f'<text class="ax cache-ax" x="{LEFT - 6}" y="{CACHE_BOTTOM}" text-anchor="end" dominant-baseline="middle">0%</text>',
           f'<text class="ax cache-ax" x="{RIGHT + 6}" y="{(CACHE_TOP + CACHE_BOTTOM) / 2}" dominant-baseline="middle">cached</text>']
    cached = " ".join(f"{_f(x(i))},{_f(CACHE_BOTTOM - (p.cached / p.prompt if p.prompt else 0) * h)}" for i, p in enumerate(rep.points))
    out.append(f'<polyline class="cache" points="{cached}"><title>cached share of each request\'s input</title></polyline>')
    return out


def _turn_labels(rep: Report, x: Callable[[float], float]) -> list[str]:
    firsts: list[tuple[int, int]] = []  # (request index, turn) where a new turn begins
    last = None
    for i, p in enumerate(rep.points):
        if p.turn != last:
            firsts.append((i, p.turn))
            last = p.turn
    if not firsts:
        return []
    gap = max(1, len(rep.points) // LABELS_MAX)
    out: list[str] = []
    next_ok = 0
    for i, turn in firsts:
        if i < next_ok:
            continue
        xx = _f(x(i))
        out.append(f'<line class="tick" x1="{xx}" x2="{xx}" y1="{BOTTOM}" y2="{BOTTOM + 5}"/>')
        out.append(f'<text class="ax" x="{xx}" y="{BOTTOM + 17}" text-anchor="middle">{turn}</text>')
        next_ok = i + gap
    return out


def _markers(rep: Report, x: Callable[[float], float]) -> list[str]:
    out: list[str] = []
    for c in rep.compactions:
        xx = _f(x(c["at"] - 0.5))
        before, after = c.get("tokens_before"), c.get("tokens_after")
        tip = f"compaction at seq {c['seq']} ({escape(str(c.get('mode', '')))}): {num(before)} → {num(after)} tokens, through seq {num(c.get('through_seq'))}"
        out.append(
            f'<g class="mk comp" data-compaction="{c["seq"]}" data-before="{before if isinstance(before, int) else ""}" '
            f'data-after="{after if isinstance(after, int) else ""}" tabindex="0"><title>{tip}</title>'
            f'<line x1="{xx}" x2="{xx}" y1="{TOP}" y2="{BOTTOM}"/>'
            f'<path d="M{xx} {TOP + 9} l-6 -9 h12 z"/></g>'
        )
    for pr in rep.prunes:
        xx = _f(x(pr["at"]))
        tip = f"prune batch (cache-aware): the prefix is rewritten at the request after seq {pr['seq']}"
        out.append(
            f'<g class="mk prune" data-prune="{pr["seq"]}" tabindex="0"><title>{tip}</title>'
            f'<path d="M{xx} {BOTTOM - 2} l-5 -9 h10 z"/></g>'
        )
    for pf in rep.prefires:
        xx = _f(x(pf["at"] - (0.5 if pf["state"] != "pending" else 0)))
        state = pf["state"]
        tip = (
            f"two-pass prefire, pass-1 note {state} at the compaction of seq {pf.get('seq')}"
            if state != "pending"
            else f"two-pass prefire: a pass-1 note over {num(pf.get('prefix_len'))} items waits for the next compaction"
        )
        out.append(
            f'<g class="mk prefire {state}" data-prefire="{escape(state)}" tabindex="0"><title>{tip}</title>'
            f'<path d="M{xx} {TOP + 14} l5 6 l-5 6 l-5 -6 z"/></g>'
        )
    return out
