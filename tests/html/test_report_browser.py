"""The report in a real browser: headless Chromium runs the page's scripts and draws it."""
from __future__ import annotations

import base64
import http.server
import re
import threading
from pathlib import Path
from typing import Iterator

from support import browser
import orjson
import pytest
from support import FIXTURES, cli
from support.html_check import Page
from support.report_sessions import log_events, rich_session

SECTIONS = {"summary", "timeline", "view", "compactions", "usage"}


class _Counting(http.server.BaseHTTPRequestHandler):
    paths: list[str]  # set per server: the paths requested

    def do_GET(self) -> None:  # the stdlib's name
        type(self).paths.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 that records every request it gets."""
    handler = type("Handler", (_Counting,), {"paths": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler.paths
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_dom_after_scripts_has_sections_items_markers_and_escaped_text(tmp_path: Path, server: tuple[str, list[str]]) -> None:
    chromium = browser.find()
    url, hits = server
    s = rich_session(tmp_path / "rich", url=url)
    page = tmp_path / "rich.html"
    cli("report", str(s), "-o", str(page), check=True)

    dom = Page(browser.dump_dom(chromium, page))
    assert SECTIONS <= dom.ids()
    assert dom.tags("html")[0].get("data-ready"), "the page's script ran to its end"
    items = orjson.loads(cli("inspect", str(s), "--items", "--json", check=True).stdout)["items"]
    assert len(dom.with_attr("data-seq")) == len(items)
    comps = [e for e in log_events(s) if e["kind"] == "compaction" and not e.get("agent")]
    assert len(dom.with_attr("data-compaction")) == len(comps) == 2
    assert '<script>alert("pwned")</script>' in dom.text
    assert not dom.tags("img") and not dom.tags("marquee") and not dom.tags("link")
    assert dom.network_references() == []
    assert hits == [], f"the page fetched {hits}"


def test_the_no_request_check_sees_a_request(tmp_path: Path, server: tuple[str, list[str]]) -> None:
    """The control for the test above: a page that does reference the server is caught."""
    chromium = browser.find()
    url, hits = server
    page = tmp_path / "control.html"
    page.write_text(f'<!DOCTYPE html><img src="{url}/control.png">')
    browser.dump_dom(chromium, page)
    assert hits == ["/control.png"]
    assert Page(page.read_text()).network_references()


def test_pages_of_a_long_view_keep_every_item(tmp_path: Path) -> None:
    chromium = browser.find()
    from support import call, msg, result, session_event, write_log

    events = [session_event("long-view")]
    for i in range(200):
        events += [msg("user", f"u{i}", f"u{i}"), msg("assistant", f"a{i}", f"a{i}"), call(f"c{i}"), result(f"c{i}", f"out {i}")]
    s = write_log(tmp_path / "s", events)
    page = tmp_path / "s.html"
    cli("report", str(s), "-o", str(page), check=True)
    dom = Page(browser.dump_dom(chromium, page))
    pages = [a for _, a in dom.elements if "data-page" in a]
    assert len(pages) > 1
    assert sum("hidden" in a for a in pages) == len(pages) - 1  # the script shows one page at a time
    items = orjson.loads(cli("inspect", str(s), "--items", "--json", check=True).stdout)["items"]
    assert len(dom.with_attr("data-seq")) == len(items) == 600  # a user, an assistant carrying its call, a result


_PIXELS = """<!DOCTYPE html><canvas id="c"></canvas><pre id="result">pending</pre><script>
var img = new Image();
img.onload = function () {
  var c = document.getElementById('c'); c.width = img.width; c.height = img.height;
  var g = c.getContext('2d'); g.drawImage(img, 0, 0);
  var d = g.getImageData(0, 0, img.width, img.height).data;
  var colours = {}, ink = 0, n = 0;
  for (var i = 0; i < d.length; i += 4 * 7) {
    n++; colours[d[i] + ',' + d[i + 1] + ',' + d[i + 2]] = 1;
    if (d[i] + d[i + 1] + d[i + 2] < 600) ink++;
  }
  document.getElementById('result').textContent = JSON.stringify({w: img.width, h: img.height, colours: Object.keys(colours).length, ink: ink / n});
};
img.src = 'data:image/png;base64,PNG';
</script>"""


def _pixels(chromium: str, png: Path, tmp_path: Path) -> dict[str, float]:
    """Decode the PNG in the browser and count what it shows."""
    check = tmp_path / f"{png.stem}-pixels.html"
    check.write_text(_PIXELS.replace("PNG", base64.b64encode(png.read_bytes()).decode()))
    dom = browser.dump_dom(chromium, check, budget_ms=5000)
    found = re.search(r'<pre id="result">(\{.*?\})</pre>', dom)
    assert found, dom[-500:]
    return orjson.loads(found.group(1))


@pytest.mark.parametrize("width", [1280, 390])
def test_screenshot_of_the_demo_page_is_not_blank(tmp_path: Path, width: int) -> None:
    chromium = browser.find()
    page = tmp_path / "demo.html"
    cli("report", str(FIXTURES / "sessions" / "demo"), "-o", str(page), check=True)
    png = browser.screenshot(chromium, page, tmp_path / f"demo-{width}.png", width=width, height=1400)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    seen = _pixels(chromium, png, tmp_path)
    assert seen["w"] == width and seen["h"] == 1400
    assert seen["colours"] > 20 and seen["ink"] > 0.01, seen


def test_the_index_sorts_by_a_column(tmp_path: Path) -> None:
    chromium = browser.find()
    from support import msg, session_event, write_log

    root = tmp_path / "root"
    for name, turns in (("b-two", 2), ("a-five", 5), ("c-three", 3)):
        write_log(root / name, [session_event(name)] + [msg("user", f"q{i}", f"u{i}") for i in range(turns)])
    out = tmp_path / "site"
    cli("report", str(root), "-o", str(out), check=True)

    def order(fragment: str) -> list[str]:
        dom = Page(browser.dump_dom(chromium, out / "index.html", fragment=fragment))
        return [a["data-session"] for a in dom.with_attr("data-session")]

    assert order("") == ["a-five", "b-two", "c-three"]  # as found: by path
    assert order("#sort=-turns") == ["a-five", "c-three", "b-two"]
    assert order("#sort=turns") == ["b-two", "c-three", "a-five"]
    assert order("#sort=-session") == ["c-three", "b-two", "a-five"]


def test_keyboard_and_hover_read_out_a_request_and_a_marker(tmp_path: Path) -> None:
    """The timeline's read-out, driven as a user would: focus + End, then a compaction marker."""
    chromium = browser.find()
    s = rich_session(tmp_path / "rich")
    html = cli("report", str(s), check=True).stdout.decode()
    drive = """<script>
var svg = document.querySelector('#timeline svg'), out = document.getElementById('readout');
svg.focus(); svg.dispatchEvent(new KeyboardEvent('keydown', {key: 'End', bubbles: true}));
document.body.setAttribute('data-last', out.textContent);
svg.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowLeft', bubbles: true}));
document.body.setAttribute('data-before-last', out.textContent);
svg.querySelector('[data-compaction]').dispatchEvent(new MouseEvent('mouseenter'));
document.body.setAttribute('data-marker', out.textContent);
</script></body>"""
    page = tmp_path / "driven.html"
    page.write_text(html.replace("</body>", drive))
    body = Page(browser.dump_dom(chromium, page)).tags("body")[0]
    usages = [e for e in log_events(s) if e["kind"] == "usage" and not e.get("agent")]
    n = len(usages)
    assert body["data-last"].startswith(f"request {n} of {n} · seq {usages[-1]['seq']} ·"), body["data-last"]
    assert "% cached" in body["data-last"] and "claude-sonnet-4-5" in body["data-last"]
    assert body["data-before-last"].startswith(f"request {n - 1} of {n} · seq {usages[-2]['seq']} ·")
    first = next(e for e in log_events(s) if e["kind"] == "compaction")
    assert body["data-marker"].startswith(f"compaction at seq {first['seq']}") and f"{first['tokens_before']:,} →" in body["data-marker"]
