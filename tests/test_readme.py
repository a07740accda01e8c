"""The README opens with exactly two commands, and CI runs the second one verbatim."""
from __future__ import annotations

from conftest import ROOT


def _first_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index("```")
    body = text[text.index("\n", start) + 1 : text.index("```", start + 3)]
    return [line for line in body.splitlines() if line.strip()]


def test_readme_opens_with_two_commands() -> None:
    lines = _first_block()
    assert len(lines) == 2
    assert lines[0].startswith("pip install . && catty-ctx ")
    assert "[test]" in lines[1] and "pytest" in lines[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    first, second = _first_block()
    assert second in ci.splitlines()
    assert "exit 1" in ci[ci.index('"$rc" -eq 5') :]
