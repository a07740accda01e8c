"""`catty-ctx report`: one self-contained page per session, an index for a ROOT (SPEC `report`)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from support import FIXTURES, cli, msg, session_event, write_log
from support.html_check import Page
from support.report_sessions import log_events, rich_session

SECTIONS = {"summary", "timeline", "view", "compactions", "usage"}


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rich_session(tmp_path_factory.mktemp("rich") / "rich")


@pytest.fixture(scope="module")
def rich_page(rich: Path) -> Page:
    proc = cli("report", str(rich), check=True)
    return Page(proc.stdout.decode())


def test_the_page_has_the_five_sections(rich_page: Page) -> None:
    assert SECTIONS <= rich_page.ids()
    assert rich_page.tags("svg"), "the timeline is an SVG drawn at build time"


def test_one_data_seq_element_per_view_item(rich: Path, rich_page: Page) -> None:
    items = orjson.loads(cli("inspect", str(rich), "--items", "--json", check=True).stdout)["items"]
    marked = rich_page.with_attr("data-seq")
    assert len(marked) == len(items)
    want = ["" if not isinstance(r["item"].get("seq"), int) else str(r["item"]["seq"]) for r in items]
    assert [a["data-seq"] for a in marked] == want  # in view order, synthetic items empty


def test_one_marker_per_main_agent_compaction(rich: Path, rich_page: Page) -> None:
    comps = [e["seq"] for e in log_events(rich) if e["kind"] == "compaction" and not e.get("agent")]
    assert len(comps) == 2
    assert [int(a["data-compaction"]) for a in rich_page.with_attr("data-compaction")] == comps


def test_prune_batches_match_prune_stats_and_prefires_are_marked(rich: Path, rich_page: Page) -> None:
    stats = orjson.loads(cli("prune", str(rich), "--stats", check=True).stderr.splitlines()[-1])["stats"]
    assert stats["batches"] >= 1
    assert len(rich_page.with_attr("data-prune")) == stats["batches"]
    # At this 20,000-token window no note fits beside the live tail (the fitted reserve alone is
    # 32,768 tokens): no prefire ran, and the two-pass compaction found no note.
    assert sorted(a["data-prefire"] for a in rich_page.with_attr("data-prefire")) == ["miss"]


def test_a_prefired_note_that_two_pass_used_is_marked_a_hit(tmp_path: Path) -> None:
    from catty_ctx import compact_session, create_session

    s = create_session(tmp_path / "s", session_id="hit-1", window=200_000)
    s.append([{"kind": "message", "id": f"m{i}", "role": "user" if i % 2 else "assistant", "text": f"turn text {i} " * 40} for i in range(1, 13)])
    compact_session(s, prefire=True)
    s.append([{"kind": "message", "id": "late", "role": "user", "text": "one more"}])
    compact_session(s, force=True, two_pass=True)
    page = Page(cli("report", str(tmp_path / "s"), check=True).stdout.decode())
    assert [a["data-prefire"] for a in page.with_attr("data-prefire")] == ["hit"]
    s.append([{"kind": "message", "id": f"n{i}", "role": "user" if i % 2 else "assistant", "text": f"more text {i} " * 40} for i in range(1, 13)])
    compact_session(s, prefire=True)  # a note waiting for the next compaction
    page = Page(cli("report", str(tmp_path / "s"), check=True).stdout.decode())
    assert [a["data-prefire"] for a in page.with_attr("data-prefire")] == ["hit", "pending"]


def test_session_text_is_escaped_never_markup(rich_page: Page) -> None:
    assert len(rich_page.tags("script")) == 2  # the chart's data and the page's own script
    assert not rich_page.tags("img") and not rich_page.tags("link") and not rich_page.tags("marquee")
    assert '<script>alert("pwned")</script>' in rich_page.text  # shown as text


def test_no_network_reference(rich_page: Page) -> None:
    assert rich_page.network_references() == []


def test_summary_usage_and_compactions(rich_page: Page) -> None:
    text = rich_page.text
    assert "rich-1" in text and "claude-sonnet-4-5" in text and "20,000 tokens" in text
    assert "explore-1" in text and "main" in text  # usage by agent
    assert "claude-haiku-4-5" in text  # usage by model
    assert "segment_000.md" in text and "compaction_requests/" in text  # segments index, artifact path


def test_blob_handles_show_their_size(rich: Path, rich_page: Page) -> None:
    (blob,) = os.listdir(rich / "blobs")
    assert f"stored in full as blob {blob} (60,000 bytes)" in rich_page.text


def test_large_outputs_keep_head_and_tail(tmp_path: Path) -> None:
    out = "HEAD-" + "m" * 5000 + "-TAIL"
    s = write_log(tmp_path / "s", [session_event(), msg("user", "go"), msg("assistant", "x", "a"),
                                    {"kind": "tool_call", "call_id": "c", "name": "t", "args": {}},
                                    {"kind": "tool_result", "call_id": "c", "output": out, "is_error": False}])
    page = Page(cli("report", str(s), check=True).stdout.decode())
    assert "HEAD-" in page.text and "-TAIL" in page.text and page.tags("details")


def test_report_reads_an_event_stream(rich: Path) -> None:
    data = (rich / "updates.jsonl").read_bytes()
    page = Page(cli("report", "-", input=data, check=True).stdout.decode())
    assert SECTIONS <= page.ids()
    assert len(page.with_attr("data-compaction")) == 2


def test_output_file(tmp_path: Path) -> None:
    dest = tmp_path / "demo.html"
    proc = cli("report", str(FIXTURES / "sessions" / "demo"), "-o", str(dest))
    assert proc.returncode == 0 and proc.stdout == b""
    assert SECTIONS <= Page(dest.read_text()).ids()


def test_an_unreadable_session_gets_a_page_that_says_what_is_wrong(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "hi")], raw_tail=b"{not json\n")
    dest = tmp_path / "s.html"
    proc = cli("report", str(s), "-o", str(dest))
    assert proc.returncode == 65
    assert b"updates.jsonl:3" in proc.stderr and b"Traceback" not in proc.stderr
    page = Page(dest.read_text())
    assert SECTIONS <= page.ids()
    assert "updates.jsonl:3" in page.text and "invalid line: 1" in page.text  # and what repair --check found


def test_output_into_a_folder_that_cannot_be_written_exits_73(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    demo = str(FIXTURES / "sessions" / "demo")
    for args in (["-o", str(blocker / "page.html")], ["-o", str(tmp_path)]):
        proc = cli("report", demo, *args)
        assert proc.returncode == 73, proc.stderr
        assert proc.stderr.count(b"\n") == 1 and b"Traceback" not in proc.stderr
    proc = cli("report", str(FIXTURES / "sessions"), "-o", str(blocker / "site"))
    assert proc.returncode == 73 and b"Traceback" not in proc.stderr
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        assert cli("report", demo, "-o", str(ro / "page.html")).returncode == 73
        assert cli("report", str(FIXTURES / "sessions"), "-o", str(ro)).returncode == 73


def test_root_writes_a_page_per_session_and_a_sortable_index(tmp_path: Path, rich: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "sessions" / "demo", root / "a" / "demo")
    shutil.copytree(rich, root / "b" / "rich")
    write_log(root / "c" / "broken", [session_event("broken-1"), msg("user", "hi")], raw_tail=b"[1, 2]\n")
    out = tmp_path / "site"
    proc = cli("report", str(root), "-o", str(out))
    assert proc.returncode == 65, proc.stderr  # the broken session is reported, its page still written
    assert b"c/broken/updates.jsonl:3" in proc.stderr
    index = Page((out / "index.html").read_text())
    rows = index.tags("tr")[1:]
    assert len(rows) == 3
    links = [a["href"] for a in index.tags("a")]
    assert len(links) == 3 and all((out / h).is_file() for h in links)
    assert index.tags("table")[0]["class"] == "sortable" and len(index.tags("button")) == 9
    text = index.text
    assert "demo-0001" in text and "rich-1" in text and "cannot read" in text and "updates.jsonl:3" in text
    for header in ("session", "source", "model", "turns", "tokens", "% window", "compactions", "problems", "cost"):
        assert header in text
    assert index.network_references() == []
    broken = next(h for h in links if "broken" in h)
    assert "updates.jsonl:3" in Page((out / broken).read_text()).text


def test_root_needs_an_output_folder(tmp_path: Path) -> None:
    proc = cli("report", str(FIXTURES / "sessions"))
    assert proc.returncode == 2 and b"-o DIR" in proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("report", str(empty), "-o", str(tmp_path / "out")).returncode == 2


def test_a_missing_session_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli("report", str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stdout == b""


def test_library_builds_the_same_page(rich: Path) -> None:
    from catty_ctx.html import build_report, render_page

    rep = build_report(rich)
    assert rep.readable and rep.session_id == "rich-1" and len(rep.compactions) == 2
    assert 'id="timeline"' in render_page(rich)


def test_docs_show_the_demo_page_as_the_script_draws_it() -> None:
    import struct

    from support import ROOT

    doc = (ROOT / "docs" / "report.md").read_text()
    assert "](report-demo.png)" in doc and "](report-compacted.png)" in doc and "python docs/screenshots.py" in doc
    script = (ROOT / "docs" / "screenshots.py").read_text()
    for name, width in (("report-demo.png", 1280), ("report-demo-narrow.png", 390), ("report-compacted.png", 1280)):
        assert f'"{name}", {width},' in script
        png = (ROOT / "docs" / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
        assert struct.unpack(">I", png[16:20])[0] == width


def test_without_usage_events_the_timeline_uses_the_estimate(tmp_path: Path) -> None:
    from support import call, result

    events = [session_event("no-usage", window=4000)]
    for i in range(6):
        events += [msg("user", f"question {i}", f"u{i}"), msg("assistant", "looking", f"a{i}"), call(f"c{i}"), result(f"c{i}", "data " * 200)]
    s = write_log(tmp_path / "s", events)
    cli("compact", str(s), "--force", check=True)
    page = Page(cli("report", str(s), check=True).stdout.decode())
    assert "the estimate of the view" in page.text
    assert len(page.with_attr("data-compaction")) == 1
    data = orjson.loads(next(t for t in page.texts if '"points"' in t))
    assert data["estimated"] and len(data["points"]) == 6  # one request per assistant message
    contexts = [p[2] for p in data["points"]]
    assert contexts == sorted(contexts) and contexts[0] > 0


@pytest.mark.parametrize("role", ["user", "assistant", "tool"])
def test_any_text_is_shown_as_text(tmp_path_factory: pytest.TempPathFactory, role: str) -> None:
    """Whatever a session holds (markup, entities, quotes, a closing script tag), the page
    shows it verbatim as text and gains no element from it."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from catty_ctx.html import render_page

    pieces = st.sampled_from(["<", ">", "&", '"', "'", "</script>", "<!--", "-->", "<img src=x>", "&amp;", "]]>", "\u2028", "é", " ", "a", "\n"])
    texts = st.lists(pieces, min_size=1, max_size=30).map("".join)
    baseline = Page(render_page(write_log(tmp_path_factory.mktemp("s") / "s", [session_event(), msg("user", "plain")])))
    tags = sorted(t for t, _ in baseline.elements)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(texts)
    def check(text: str) -> None:
        if role == "tool":
            events = [session_event(), msg("user", "plain"), {"kind": "tool_result", "call_id": "c", "output": text, "is_error": False}]
        else:
            events = [session_event(), msg(role, text)] if role == "user" else [session_event(), msg("user", "plain"), msg(role, text)]
        page = Page(render_page(write_log(tmp_path_factory.mktemp("s") / "s", events)))
        assert text.strip() in page.text
        if role == "user":
            assert sorted(t for t, _ in page.elements) == tags  # the same elements as for plain text

    check()


@pytest.mark.parametrize("name", ["sessions/demo", "sessions/dangling", "sessions/torn", *(f"broken/{p.name}" for p in sorted((FIXTURES / "broken").iterdir()) if p.is_dir())])
def test_every_fixture_page_shows_the_view_inspect_shows(tmp_path: Path, name: str) -> None:
    """Whether the repair check's fold serves the page or the log is folded again (the check
    dropped an event, or could not read a line), the page's items are inspect --items's."""
    s = tmp_path / "s"
    shutil.copytree(FIXTURES / name, s)
    page_proc = cli("report", str(s))
    inspect = cli("inspect", str(s), "--items", "--json")
    page = Page(page_proc.stdout.decode())
    if inspect.returncode == 0:
        assert page_proc.returncode == 0, page_proc.stderr
        want = ["" if not isinstance(r["item"].get("seq"), int) else str(r["item"]["seq"]) for r in orjson.loads(inspect.stdout)["items"]]
        assert [a["data-seq"] for a in page.with_attr("data-seq")] == want
        check = orjson.loads(cli("repair", str(s), "--check", "--json").stdout)
        for kind, n in check["problems"].items():
            assert f"{kind.replace('_', ' ')}: {n}" in page.text
    else:
        assert page_proc.returncode == inspect.returncode == 65
        assert inspect.stderr.decode().split("error: ", 1)[1].strip() in page.text


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_disk_on_stdout_exits_73() -> None:
    import subprocess
    import sys

    from support import ROOT

    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "catty_ctx", "report", str(FIXTURES / "sessions" / "demo")], stdout=full,
                              stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert proc.returncode == 73 and proc.stderr.count(b"\n") == 1 and b"stdout" in proc.stderr
