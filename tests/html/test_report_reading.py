"""The report reads at a glance: a y axis scaled to the data, the cached share on its own
scale, headers in words, unpriced costs marked, and a terminal gets a file, not HTML."""
from __future__ import annotations

import re
from pathlib import Path

from support import cli, cli_on_a_terminal, msg, session_event, write_log
from support.html_check import Page
from support.report_sessions import rich_session

from catty_ctx.html.svg import BOTTOM, CACHE_BOTTOM, CACHE_TOP, TOP


def _usage(seq_model: str, context: int, cached: int = 0) -> dict:
    return {"kind": "usage", "model": seq_model, "input": context - cached, "output": 10, "cache_read": cached, "cache_write": 0, "reasoning": 0}


def _small(tmp_path: Path, model: str = "claude-sonnet-4-5") -> Path:
    """A session that uses about 2 % of its window."""
    evs = [session_event("small-1", window=200_000)]
    for i in range(1, 6):
        evs += [msg("user", f"question {i}", f"u{i}"), msg("assistant", f"answer {i}", f"a{i}"), _usage(model, 3000 + 200 * i, 1000 * (i % 3))]
    return write_log(tmp_path / "small", evs)


def _svg(page: Page) -> str:
    return page.raw[page.raw.index("<svg"):page.raw.index("</svg>")]


def _ys(points: str) -> list[float]:
    return [float(p.split(",")[1]) for p in points.split()]


def test_a_session_far_below_its_window_fills_the_chart_and_says_where_the_lines_are(tmp_path: Path) -> None:
    page = Page(cli("report", str(_small(tmp_path)), check=True).stdout.decode())
    svg = _svg(page)
    ctx = _ys(re.search(r'<polyline class="ctx" points="([^"]+)"', svg).group(1))
    assert min(ctx) < TOP + (BOTTOM - TOP) * 0.3  # the peak is near the top, not a flat line at zero
    assert 'class="threshold"' not in svg and 'class="window"' not in svg
    assert "off this scale" in svg and "(2% of the window)" in svg


def test_a_session_near_its_threshold_draws_the_window_and_threshold_lines(tmp_path: Path) -> None:
    svg = _svg(Page(cli("report", str(rich_session(tmp_path / "rich")), check=True).stdout.decode()))
    assert 'class="threshold"' in svg and 'class="window"' in svg and "off this scale" not in svg


def test_the_cached_share_has_its_own_panel_and_never_crosses_the_context_chart(tmp_path: Path) -> None:
    svg = _svg(Page(cli("report", str(_small(tmp_path)), check=True).stdout.decode()))
    cache = _ys(re.search(r'<polyline class="cache" points="([^"]+)"', svg).group(1))
    assert all(CACHE_TOP <= y <= CACHE_BOTTOM for y in cache) and min(cache) < CACHE_BOTTOM  # some share drawn, all in the panel
    assert CACHE_TOP > BOTTOM


def test_headers_are_words_and_unpriced_costs_are_marked_with_a_note(tmp_path: Path) -> None:
    page = Page(cli("report", str(_small(tmp_path, model="private-model-x")), check=True).stdout.decode())
    headers = [h for h in re.findall(r"<th[^>]*>([^<]*)</th>", page.raw)]
    assert "cost (USD)" in headers and "cost_usd" not in headers and "cache_read" not in headers
    assert 'unpriced<a href="#unpriced">*</a>' in page.raw and "No price is known for private-model-x" in page.text
    rich = Page(cli("report", str(rich_session(tmp_path / "rich")), check=True).stdout.decode())
    assert "through seq" in [h for h in re.findall(r"<th[^>]*>([^<]*)</th>", rich.raw)]


def test_on_a_terminal_the_page_goes_to_a_file_named_by_the_session(tmp_path: Path) -> None:
    s = _small(tmp_path)
    work = tmp_path / "here"
    work.mkdir()
    (work / "small-1.html").write_text("someone else's page")
    code, _err, shown = cli_on_a_terminal("report", str(s), stream="stdout", cwd=work)
    assert code == 0 and b"<html" not in shown
    assert (work / "small-1.html").read_text() == "someone else's page"  # never replaced
    assert "<html" in (work / "small-1-2.html").read_text()
    piped = cli("report", str(s))
    assert piped.returncode == 0 and piped.stdout.startswith(b"<!DOCTYPE html>")  # a pipe still gets the page
