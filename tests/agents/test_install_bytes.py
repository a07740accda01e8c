"""Issue 43, installers that only ever add or remove their own: the bytes outside our entries stay
as the user wrote them — indentation (tabs, two or four spaces, one line), key order, escapes,
CRLF, no final newline — and an uninstall after an install gives the file's first bytes back."""
from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import cli

from catty_ctx.agents.jsonsplice import edited

HANDLER = '{"type": "command", "command": "my-linter --fix", "timeout": 5}'
LAYOUTS = {
    "two spaces": '{\n  "model": "opus",\n  "env": {"KEY": "s3cret"}\n}\n',
    "four spaces": '{\n    "permissions": {\n        "allow": ["Bash(ls)", "Read"]\n    },\n    "model": "opus"\n}\n',
    "tabs, no final newline": '{\n\t"zeta": 1,\n\t"alpha": [1, 2.50, 1E5, true, null]\n}',
    "one line, compact": '{"model":"opus","permissions":{"allow":["Bash(ls)"]}}',
    "one line, spaced": '{ "model" : "opus", "x": [ ] }\n',
    "CRLF": '{\r\n  "model": "opus",\r\n  "note": "line\\nbreak"\r\n}\r\n',
    "unicode escapes": '{\n  "greeting": "caf\\u00e9 \\ud83d\\ude00",\n  "raw": "café",\n  "half": "\\ud800"\n}\n',
    "their hooks, ours appended": '{\n    "hooks": {\n        "PreCompact": [\n            {"hooks": [' + HANDLER + ']}\n        ],\n'
                                  '        "Stop": [{"hooks": [' + HANDLER + ']}]\n    },\n    "model": "opus"\n}\n',
    "hooks last, keys out of order": '{"z": 0, "a": {"c": 1, "b": 2}, "hooks": {"Stop": [{"matcher": "x", "hooks": [' + HANDLER + ']}]}}',
}


def _only_inserted(before: bytes, after: bytes) -> list[str]:
    """The runs of bytes AFTER adds to BEFORE; fails when any byte of BEFORE changed or went."""
    ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    assert {op for op, *_ in ops} <= {"equal", "insert"}, [(op, before[a:b], after[c:d]) for op, a, b, c, d in ops if op != "equal"]
    return [after[c:d].decode() for op, _a, _b, c, d in ops if op == "insert"]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_claude_install_inserts_only_our_entries_and_uninstall_gives_the_bytes_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                      layout: str) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    f = tmp_path / "settings.json"
    before = LAYOUTS[layout].encode()
    f.write_bytes(before)
    servers = tmp_path / "cfg" / ".claude.json"  # (Claude Code's own big file: the recall server goes there)
    servers.parent.mkdir()
    servers.write_bytes(before)
    assert cli("hook", "install", "claude", "--settings", str(f), "--statusline", "--mcp").returncode == 0
    assert "".join(_only_inserted(before, servers.read_bytes())).count('"catty-recall"') == 1
    assert cli("hook", "uninstall", "claude", "--settings", str(f), "--mcp").returncode == 0
    assert servers.read_bytes() == before
    f.write_bytes(before)
    assert cli("hook", "install", "claude", "--settings", str(f), "--statusline").returncode == 0
    after = f.read_bytes()
    inserted = "".join(_only_inserted(before, after))
    for ours in ("catty-ctx hook claude pre-compact", "catty-ctx hook claude session-start", "catty-ctx statusline"):
        assert inserted.count(ours) == 1
    assert "my-linter" not in inserted and "opus" not in inserted  # (nothing of theirs written again)
    if b"\n" in before:  # our entries laid out as theirs: the same newline and indent unit
        assert ("\r\n" in inserted) == (b"\r\n" in before) and ("\t" in inserted) == (b"\t" in before)
    else:
        assert "\n" not in inserted
    assert cli("hook", "install", "claude", "--settings", str(f), "--statusline").returncode == 0
    assert f.read_bytes() == after  # (already there: not a byte changed)
    assert cli("hook", "uninstall", "claude", "--settings", str(f), "--statusline").returncode == 0
    assert f.read_bytes() == before
    assert (tmp_path / "settings.json.catty-ctx.bak").read_bytes() == after


@pytest.mark.parametrize("layout", ["four spaces", "tabs, no final newline", "one line, compact", "their hooks, ours appended"])
def test_codex_hooks_json_keeps_its_bytes_too(tmp_path: Path, layout: str) -> None:
    codex = tmp_path / "codex"
    codex.mkdir()
    hooks = codex / "hooks.json"
    before = LAYOUTS[layout].encode()
    hooks.write_bytes(before)
    assert cli("hook", "install", "codex", "--codex-home", str(codex)).returncode == 0
    inserted = "".join(_only_inserted(before, hooks.read_bytes()))
    assert inserted.count("catty-ctx hook codex pre-compact") == 1 and "my-linter" not in inserted
    assert cli("hook", "uninstall", "codex", "--codex-home", str(codex)).returncode == 0
    assert hooks.read_bytes() == before


def test_our_entry_cut_out_of_a_group_of_the_users_takes_its_separator_with_it() -> None:
    ours = '{"type": "command", "command": "catty-ctx hook claude pre-compact", "timeout": 30}'
    for sep in (", ", ",\n      ", ","):
        text = '{\n  "hooks": {\n    "PreCompact": [{"hooks": [' + HANDLER + sep + ours + ']}]\n  }\n}\n'
        doc = json.loads(text)
        new = json.loads(text)
        del new["hooks"]["PreCompact"][0]["hooks"][1]
        assert edited(text, doc, new) == text.replace(sep + ours, "")
        first = '{\n  "hooks": {\n    "PreCompact": [{"hooks": [' + ours + sep + HANDLER + ']}]\n  }\n}\n'
        assert edited(first, json.loads(first), new) == text.replace(sep + ours, "")


def test_a_change_the_splice_does_not_make_in_place_is_left_to_the_whole_document() -> None:
    text = '{"a": 1, "b": 2}'
    assert edited(text, {"a": 1, "b": 2}, {"b": 3, "a": 1}) is None  # (keys moved)
    assert edited(text, {"a": 1, "b": 2}, {"a": 1, "c": 3}) is None  # (one removed, one added)
    assert edited("[1, 2]", [1, 2], [0, 1, 2]) is None  # (an element added before a kept one)
    assert edited(text, {"a": 1, "b": 2}, {"a": 1, "b": [2]}) == '{"a": 1, "b": [2]}'  # (a value replaced in place)


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**53 + 1, 2**53 - 1), st.floats(allow_nan=False, allow_infinity=False),
                     st.text(max_size=8))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                       max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(doc=st.dictionaries(st.text(max_size=6).filter(lambda k: k not in ("hooks", "statusLine")), _VALUES, max_size=5),
       indent=st.sampled_from([None, 0, 1, 2, 4, "\t"]), ascii_only=st.booleans(), tight=st.booleans(), crlf=st.booleans())
def test_any_users_file_takes_our_entries_as_an_insertion_and_gives_them_back(doc: dict, indent: object, ascii_only: bool,
                                                                              tight: bool, crlf: bool) -> None:
    from catty_ctx.agents import settings as S

    text = json.dumps(doc, indent=indent, ensure_ascii=ascii_only, separators=(",", ":") if tight else None)  # type: ignore[arg-type]
    if crlf:
        text = text.replace("\n", "\r\n")
    entries = [(event, matcher, S.hook_command("catty-ctx", "claude", hook)) for event, matcher, hook in S.CLAUDE_HOOKS]
    new, _ = S.add_hooks(doc, entries, "settings.json")
    new, _ = S.add_statusline(new, "catty-ctx", "settings.json")
    spliced = edited(text, doc, new)
    assert spliced is not None and json.loads(spliced) == new
    _only_inserted(text.encode("utf-8", "surrogatepass"), spliced.encode("utf-8", "surrogatepass"))
    back, _ = S.remove_hooks(new)
    back, _ = S.remove_statusline(back)
    assert edited(spliced, new, back) == text
