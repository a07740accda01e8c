"""On a terminal: session text prints verbatim, and tables and help read well at 80 columns.

Every run here is the real program with stdout and stderr on a pseudo-terminal, so the rich
rendering path is the one a user sees (a pipe gets JSON Lines and never meets it).
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import orjson
import pytest

from support import forked_terminal
from support import ROOT, call, cli, msg, session_event, write_log

# Text that rich would read as markup (or emoji codes) if it ever reached it as a markup string.
NASTY = ["[/\\]", "[seq 7]", "[bold]x[/bold]", "[link=https://example.invalid]x[/link]", "[bold red]styled?", ":thumbs_up:"]
# The subset a file name can hold (no "//"); a "/" in it is a folder boundary.
NASTY_PATH = "[/\\]/[seq 7] [bold]x[/bold] [bold red]"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def on_a_terminal(*args: str, columns: int = 80, cwd: Path | None = None) -> tuple[int, str]:
    """Run catty-ctx with stdout and stderr on a pseudo-terminal COLUMNS wide: (exit code, screen text)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=str(columns), LINES="50", TERM="xterm")
    env.pop("NO_COLOR", None)
    code, shown, _ = forked_terminal.run(args, env=env, cwd=cwd)
    screen = ANSI.sub("", shown.decode("utf-8", "replace")).replace("\r\n", "\n")
    # A carriage return starts the line over (a progress bar redrawn, then erased).
    return code, "\n".join(line.split("\r")[-1].rstrip() for line in screen.split("\n"))


def _sessions(tmp_path: Path) -> dict[str, Path]:
    """A ROOT holding a session full of markup-like text (folder names too), compacted into a
    segment, and a second one with a dangling call whose id looks like markup."""
    root = tmp_path / "root"
    sid = " ".join(NASTY)
    events = [
        session_event(sid, cwd="[seq 7] [bold]x[/bold]", model="m"),
        *(msg("user" if i % 2 == 0 else "assistant", text, f"m{i}") for i, text in enumerate(NASTY)),
        {"kind": "usage", "model": sid, "input": 10, "output": 5, "cache_read": 0, "cache_write": 0, "reasoning": 0},
        msg("user", "and now?", "m-last"),
    ]
    plain, s = write_log(root / NASTY_PATH / "plain", events), write_log(root / NASTY_PATH / "s", events)
    for d in (plain, s):
        cli("repair", str(d), check=True)  # summary.json, as any session has
    cli("compact", str(s), "--force", "--mode", "segments", check=True)
    # Keywords are words picked from the text; a copy whose index holds markup-like ones shows
    # that whatever they hold prints as it is.
    kw = tmp_path / "keywords"
    shutil.copytree(s, kw)
    index = orjson.loads((kw / "segments" / "index.json").read_bytes())
    index["segments"][0]["keywords"] = NASTY
    (kw / "segments" / "index.json").write_bytes(orjson.dumps(index))
    d = write_log(root / "dangling", [session_event("d-1"), msg("user", "go"), msg("assistant", "", "a"), call(sid, "t")])
    claude = tmp_path / "claude.jsonl"
    records = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "c-1", "timestamp": "2026-11-01T00:00:00Z",
                "message": {"role": "user", "content": "hello"}}] + [{"type": n} for n in NASTY]  # types no importer knows
    claude.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    agents = tmp_path / "repo" / NASTY_PATH
    agents.mkdir(parents=True)
    (agents / "AGENTS.md").write_text("Be brief.\n")
    return {"root": root, "plain": plain, "s": s, "keywords": kw, "dangling": d, "claude": claude, "agents": agents}


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _sessions(tmp_path_factory.mktemp("terminal"))


def _replay_artifact(s: Path) -> str:
    return str(next((s / "compaction_requests").glob("*.json")))


# Every command that renders a table or text on a terminal, with what it must show verbatim
# and where: in the table's lines, or anywhere on the screen (text printed as it is).
VERBATIM = {
    "inspect": (lambda p: ["inspect", str(p["s"])], NASTY, "table"),
    "inspect --items": (lambda p: ["inspect", str(p["plain"]), "--items"], NASTY, "table"),
    "inspect --context": (lambda p: ["inspect", str(p["plain"]), "--context"], NASTY + ["[seq 7] [bold]x[/bold]"], "screen"),  # the title holds the id
    "inspect ROOT": (lambda p: ["inspect", str(p["root"])], NASTY + [NASTY_PATH], "table"),
    "segment list": (lambda p: ["segment", "list", str(p["keywords"])], [", ".join(NASTY)], "table"),
    "segment grep": (lambda p: ["segment", "grep", str(p["s"]), "["], NASTY, "table"),
    "segment show": (lambda p: ["segment", "show", str(p["s"]), "0"], NASTY, "screen"),
    "usage": (lambda p: ["usage", str(p["s"])], [" ".join(NASTY)], "table"),
    "usage --by session": (lambda p: ["usage", str(p["s"]), "--by", "session"], [" ".join(NASTY)], "table"),
    "repair --check": (lambda p: ["repair", str(p["dangling"]), "--check"], [" ".join(NASTY)], "table"),
    "repair --check ROOT": (lambda p: ["repair", str(p["root"]), "--check"], [NASTY_PATH], "table"),
    "compact --check ROOT": (lambda p: ["compact", str(p["root"]), "--check"], [NASTY_PATH], "table"),
    "compact --dry-run": (lambda p: ["compact", str(p["s"]), "--force", "--dry-run"], [NASTY_PATH], "table"),
    "compact --replay": (lambda p: ["compact", "--replay", _replay_artifact(p["s"])], NASTY[:-1], "screen"),
    "fork": (lambda p: ["fork", str(p["s"]), str(p["root"].parent / "fork [seq 7] [bold red]x")], ["fork [seq 7] [bold red]x"], "table"),
    "import (skip report)": (lambda p: ["import", "claude", str(p["claude"])], NASTY, "screen"),
    "instructions": (lambda p: ["instructions", str(p["agents"]), "--no-global"], [NASTY_PATH], "table"),
}


@pytest.mark.parametrize("name", sorted(VERBATIM))
def test_session_text_prints_verbatim_on_a_terminal(place: dict[str, Path], name: str) -> None:
    args, expected, where = VERBATIM[name]
    code, screen = on_a_terminal(*args(place), columns=400)
    assert code in (0, 1), screen  # 1: a check that found something
    assert "catty-ctx: error" not in screen, screen
    shown = "\n".join(_table_lines(screen)) if where == "table" else screen
    flat = " ".join(shown.split())  # a long cell may still wrap; the words stay in order
    for text in expected:
        assert " ".join(text.split()) in flat, (text, screen)


def test_control_characters_are_shown_not_sent_to_the_terminal(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event("c-1"), msg("user", "before\x1b[2Jafter\x07")])
    code, screen = on_a_terminal("inspect", str(s), "--items", columns=200)
    assert code == 0 and "before␛[2Jafter␇" in screen


def test_segment_list_prints_keywords_as_words(place: dict[str, Path]) -> None:
    index = orjson.loads((place["s"] / "segments" / "index.json").read_bytes())
    keywords = index["segments"][0]["keywords"]
    assert keywords, "the segment has keywords"
    code, screen = on_a_terminal("segment", "list", str(place["s"]), columns=200)
    assert code == 0 and ", ".join(keywords) in screen and "['" not in screen


# -- 80 columns ----------------------------------------------------------------------------------

TABLES = {
    "inspect": lambda p: ["inspect", str(p["s"])],
    "inspect --items": lambda p: ["inspect", str(p["plain"]), "--items"],
    "inspect --items (compacted)": lambda p: ["inspect", str(p["s"]), "--items"],
    "inspect --context": lambda p: ["inspect", str(p["plain"]), "--context"],
    "inspect ROOT": lambda p: ["inspect", str(p["root"])],
    "segment list": lambda p: ["segment", "list", str(p["s"])],
    "segment grep": lambda p: ["segment", "grep", str(p["s"]), "e"],
    "usage": lambda p: ["usage", str(p["s"])],
    "usage --by day": lambda p: ["usage", str(p["s"]), "--by", "day"],
    "usage --by block": lambda p: ["usage", str(p["s"]), "--by", "block"],
    "repair --check": lambda p: ["repair", str(p["dangling"]), "--check"],
    "repair --check ROOT": lambda p: ["repair", str(p["root"]), "--check"],
    "compact --check ROOT": lambda p: ["compact", str(p["root"]), "--check"],
    "compact --dry-run ROOT": lambda p: ["compact", str(p["root"]), "--force", "--dry-run"],
    "instructions": lambda p: ["instructions", str(p["agents"]), "--no-global"],
}


def _headers(screen: str) -> list[list[str]]:
    """Each table's column headers, a header's lines joined with spaces."""
    lines = screen.split("\n")
    tables = []
    for i, line in enumerate(lines):
        if "╇" not in line:
            continue
        j = i
        while j > 0 and "┃" in lines[j - 1]:
            j -= 1
        cells = [[c.strip() for c in row.split("┃")] for row in lines[j:i]]
        tables.append([" ".join(row[k] for row in cells if row[k]) for k in range(len(cells[0]))])
    return tables


@pytest.mark.parametrize("name", sorted(TABLES))
def test_tables_at_80_columns_keep_every_header_word_whole(place: dict[str, Path], name: str) -> None:
    args = TABLES[name](place)
    code, narrow = on_a_terminal(*args, columns=80)
    assert code in (0, 1), narrow
    _, wide = on_a_terminal(*args, columns=400)
    if _headers(narrow):
        assert _headers(narrow) == _headers(wide), narrow  # no header word cut, folded or shortened
    else:  # a single row too wide for 80 columns comes as field/value lines
        [headers] = _headers(wide)
        assert [line.split("│")[0].strip() for line in narrow.split("\n") if line.split("│")[0].strip() and "│" in line] == headers, narrow
    assert all(len(line) <= 80 for line in _table_lines(narrow)), narrow
    assert "None" not in narrow and "['" not in narrow, narrow


def _table_lines(screen: str) -> list[str]:
    return [line for line in screen.split("\n") if re.search("[│┃╇]", line)]


def test_a_single_wide_row_is_shown_as_fields(place: dict[str, Path], tmp_path: Path) -> None:
    dest = tmp_path / "a-fork-with-a-long-enough-name"
    code, screen = on_a_terminal("fork", str(place["s"]), str(dest), columns=80)
    assert code == 0, screen
    sid = orjson.loads((dest / "summary.json").read_bytes())["session_id"]
    assert re.search(rf"^session id +│ {sid}$", screen, re.M), screen  # whole, on one line
    assert all(len(line) <= 80 for line in _table_lines(screen)), screen


def test_root_tables_shorten_paths_from_the_left(place: dict[str, Path]) -> None:
    code, screen = on_a_terminal("inspect", str(place["root"]), columns=80)
    assert code == 0, screen
    assert re.search(r"^…\S*dangling ", screen, re.M), screen


def test_only_the_output_layer_talks_to_rich() -> None:
    """Escaping lives in one place: a command renders through cli/output.py or not at all."""
    package = ROOT / "catty_ctx"
    users = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if re.search(r"^\s*(from|import) rich\b", p.read_text(), re.M))
    assert users == ["cli/output.py"]


def test_a_terminal_too_narrow_for_the_columns_gets_each_row_as_fields(place: dict[str, Path]) -> None:
    code, narrow = on_a_terminal("inspect", str(place["root"]), columns=50)
    assert code == 0, narrow
    _, wide = on_a_terminal("inspect", str(place["root"]), columns=400)
    [headers] = _headers(wide)
    fields = [line.split("│")[0].strip() for line in _table_lines(narrow) if line.split("│")[0].strip()]
    assert fields == headers * 3, narrow  # three sessions, every field name whole
    assert all(len(line) <= 50 for line in _table_lines(narrow)), narrow
