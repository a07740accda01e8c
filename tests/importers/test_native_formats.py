"""The format registry (catty_ctx/formats): every list of formats is read from it."""
from __future__ import annotations

import importlib
import subprocess
import sys

from catty_ctx.formats import registry as formats
from catty_ctx.importers import pipeline as importers
from catty_ctx.formats import ownership
from catty_ctx.importers import detect


def test_every_record_names_an_importer_with_convert() -> None:
    for fmt in formats.FORMATS.values():
        module = importlib.import_module(f"catty_ctx.importers.{fmt.importer}")
        assert callable(module.convert), fmt
        if fmt.usage is not None:
            importlib.import_module(f"catty_ctx.usage.{fmt.usage}")
        assert fmt.forms and set(fmt.forms) <= {"jsonl", "document", "tree", "sqlite"}


def test_import_detect_and_ownership_read_the_registry() -> None:
    assert importers.FORMATS == formats.NAMES
    assert set(importers._MODULES) == set(formats.NAMES)
    assert ownership.LABELS == {name: f.label for name, f in formats.FORMATS.items()}
    assert formats.label("claude") == "Claude Code transcript" and formats.label("nope") == "nope"
    assert set(formats.AGENT_NAMES) == {"claude", "codex", "gemini", "grok", "opencode"}
    assert "gemini" in formats.with_form("jsonl") and "opencode" not in formats.with_form("jsonl")


def test_an_unknown_format_lists_the_registry(tmp_path) -> None:
    import pytest

    from catty_ctx.errors import UsageError

    f = tmp_path / "x.jsonl"
    f.write_text("{}\n")
    with pytest.raises(UsageError, match=formats.names_text()):
        importers.resolve_format("nope", f)
    with pytest.raises(Exception, match=formats.names_text().replace(" ", " ")):
        detect.detect(f)


def test_homes_follow_the_variables(tmp_path) -> None:
    home = str(tmp_path)
    claude = formats.get("claude")
    assert formats.home_folders(claude, {}, home) == [f"{home}/.config/claude", f"{home}/.claude"]
    assert formats.home_folders(claude, {"CLAUDE_CONFIG_DIR": "/a, /b"}, home) == ["/a", "/b"]
    assert formats.home_folders(formats.get("codex"), {"CODEX_HOME": "/c"}, home) == ["/c"]
    assert formats.home_folders(formats.get("opencode"), {}, home) == [f"{home}/.local/share/opencode"]
    assert formats.home_folders(formats.get("opencode"), {"XDG_DATA_HOME": "/d"}, home) == ["/d/opencode"]
    # GROK_HOME adds a home: ~/.grok stays read (a session run elsewhere and the usual ones)
    assert formats.home_folders(formats.get("grok"), {"GROK_HOME": "/g"}, home) == ["/g", f"{home}/.grok"]
    assert formats.home_folders(formats.get("grok"), {}, home) == [f"{home}/.grok"]
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".gemini").mkdir()
    assert [(f.name, p) for f, p in formats.homes({}, home)] == [("codex", f"{home}/.codex"), ("gemini", f"{home}/.gemini")]


def test_the_registry_is_cheap_to_import() -> None:
    code = "import sys, catty_ctx; before = set(sys.modules); import catty_ctx.formats.registry; print(sorted(set(sys.modules) - before))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['catty_ctx.formats', 'catty_ctx.formats.registry']"
