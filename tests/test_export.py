"""`export`: a transcript people can read and share, in which session text is only ever text."""
from __future__ import annotations

from pathlib import Path

from support import browser
import orjson
import pytest
from support import call, cli, msg, result, session_event, write_log
from markdown_it import MarkdownIt

from catty_ctx.export import export
from catty_ctx.session.store import Session

SCRIPT = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
FENCE = "```\nnot code any more\n```` and ~~~"
TABLE = "| a | b |\n|---|---|\n| broken | row |"
ESCAPES = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;title\x07\r\x9b31m\u202eevil\u2066"
HOSTILE = f"{SCRIPT}\n{FENCE}\n{TABLE}\n{ESCAPES}\n# not a heading\n[link](javascript:alert(1))"


def _session(tmp_path: Path) -> Path:
    evs = [session_event("hostile-1", window=200_000), msg("system", "You are a coding agent.", "sys"),
           msg("user", HOSTILE, "u1"), msg("assistant", "Reading it: " + HOSTILE, "a1"),
           call("c1", "run<b>cmd</b>", {"command": HOSTILE}), result("c1", HOSTILE + "\n" + "\n".join(f"line {i}" for i in range(500))),
           {"kind": "compaction", "id": "k1", "mode": "summary", "through_seq": 5, "summary": "SUMMARY-OF-EARLIER " + HOSTILE,
            "summarizer": "extractive", "trigger": "manual", "tokens_before": 10, "tokens_after": 5, "prefix_fp": "0" * 32},
           {**msg("user", "subagent task: OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "s1"), "agent": "sub-1"}]
    return write_log(tmp_path / "s", evs)


def _text(s: Path, fmt: str, **kw: bool) -> str:
    with Session.open(s) as session:
        return "".join(export(session, fmt, **kw))


def test_markdown_renders_every_session_text_as_text(tmp_path: Path) -> None:
    md = _text(_session(tmp_path), "md")
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    rendered = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in rendered and "<img" not in rendered and "<table" not in rendered
    assert "javascript:" not in rendered.replace("(javascript:", "")  # shown as text in a code block, never a link
    assert not any(t.type == "link_open" for t in tokens for t in ([t] + (t.children or [])))
    fences = [t.content for t in tokens if t.type == "fence"]
    assert sum("not code any more" in f and "| broken | row |" in f for f in fences) >= 3  # the fence never closed early
    headings = [t for t in tokens if t.type == "heading_open"]
    assert all("not a heading" not in tokens[tokens.index(h) + 1].content for h in headings)
    assert "\x1b" not in md and "\x9b" not in md and "\u202e" not in md and "\r" not in md


def test_plain_text_holds_no_raw_terminal_escape(tmp_path: Path) -> None:
    txt = _text(_session(tmp_path), "txt")
    assert not any(ch in txt for ch in ("\x1b", "\x07", "\r", "\x9b", "\u202e", "\u2066"))
    assert "␛]52;c;ZXZpbA==" in txt and "\\u202e" in txt  # shown, not obeyed


def test_the_transcript_marks_compactions_cuts_long_results_and_labels_subagents(tmp_path: Path) -> None:
    s = _session(tmp_path)
    txt = _text(s, "txt")
    assert "Compaction (summary, by extractive): the context was summarised through seq 5" in txt and "SUMMARY-OF-EARLIER" in txt
    assert txt.index("SUMMARY-OF-EARLIER") > txt.index("Result of run<b>cmd</b>")  # where it happened
    assert f"catty-ctx inspect {s / 'updates.jsonl'} --seq 5" in txt and "line 499" in txt and "line 200" not in txt
    assert "subagent sub-1" in txt and '"command":' in txt


def test_redact_applies_the_redaction_rules(tmp_path: Path) -> None:
    s = _session(tmp_path)
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789" in _text(s, "txt")
    redacted = _text(s, "md", redact=True)
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789" not in redacted and "[REDACTED" in redacted


def test_the_html_transcript_runs_no_script_in_a_real_browser(tmp_path: Path) -> None:
    exe = browser.find()
    page = tmp_path / "t.html"
    page.write_text(_text(_session(tmp_path), "html"))
    dom = browser.dump_dom(exe, page)
    assert "<title>Transcript of" in dom and "pwned" not in dom.split("<body")[0]
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom and "<img" not in dom


def test_cli_writes_the_file_whole_and_refuses_an_unknown_format(tmp_path: Path) -> None:
    s = _session(tmp_path)
    out = tmp_path / "t.md"
    proc = cli("export", str(s), "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == b"" and out.read_text() == _text(s, "md")
    piped = cli("export", str(s), "--format", "txt")
    assert piped.returncode == 0 and piped.stdout.decode() == _text(s, "txt")
    bad = cli("export", str(s), "--format", "pdf")
    assert bad.returncode == 2 and b"unknown format" in bad.stderr and not list(tmp_path.glob("*.pdf"))


@pytest.mark.parametrize("fmt", ["md", "html", "txt"])
def test_export_reads_an_event_stream(tmp_path: Path, fmt: str) -> None:
    s = _session(tmp_path)
    proc = cli("export", "-", "--format", fmt, input=(s / "updates.jsonl").read_bytes())
    assert proc.returncode == 0 and b"SUMMARY-OF-EARLIER" in proc.stdout
    assert orjson.loads((s / "updates.jsonl").read_bytes().splitlines()[0])["kind"] == "session"


def test_a_plain_export_starts_without_the_cli_framework(tmp_path: Path) -> None:
    from support import plain_run_loads

    status, loaded = plain_run_loads("export", str(_session(tmp_path)), "--format", "txt")
    assert status == 0 and loaded == []


_AGENTS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
# Claude Code's and Codex's session files, and Grok Build's logs (a grok folder's other .jsonl are its side files)
AGENT_FILES = sorted([*_AGENTS_DIR.glob("c*/*/**/*.jsonl"), *_AGENTS_DIR.glob("grok-*/*/.grok/sessions/*/*/updates.jsonl")])


@pytest.mark.parametrize("native", AGENT_FILES, ids=lambda p: p.parts[-2] if p.name == "updates.jsonl" else p.parts[-5] if "sessions" in p.parts else p.parts[-4])
def test_export_reads_an_agents_own_session_file_as_its_import_does(native: Path) -> None:
    # (what users export most: a Claude Code or Codex file where it lies; never "lacks field 'v'")
    direct = cli("export", str(native))
    assert direct.returncode == 0, direct.stderr
    imported = cli("import", "auto", str(native))
    piped = cli("export", "-", input=imported.stdout)
    assert piped.returncode == 0 and direct.stdout == piped.stdout
    assert any(b"agent: " + name in direct.stdout for name in (b"claude", b"codex", b"grok"))
