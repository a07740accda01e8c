"""The price table shipped with the package resolves every name as the price library does, without loading it (usage/pricetable.py)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from support import plain_run
from support.usage_trees import CLAUDE_MODELS, claude_tree

from catty_ctx.usage import library, pricetable

TABLE = pricetable.load(library.version()[0], library.data_file())
shipped = pytest.mark.skipif(TABLE is None, reason="the installed genai-prices is not the one the shipped table was made from "
                                                   "(python -m catty_ctx.usage.library makes it anew)")


def _names() -> list[str]:
    """Names as agents and gateways write them: every model's id and literal match strings, a sample of
    them dated, cased, behind gateways and cloud prefixes, and names no one prices."""
    data = library.snapshot()
    literal: list[str] = []

    def strings(rule: object) -> None:
        for field in ("equals", "starts_with"):
            if hasattr(rule, field):
                literal.append(getattr(rule, field))
        for field in ("or_", "and_"):
            for sub in getattr(rule, field, None) or ():
                strings(sub)

    for provider in data.providers:
        for model in provider.models:
            literal.append(model.id)
            strings(model.match)
    rng = random.Random(45)
    sample = rng.sample(sorted(set(literal)), 300)
    forms = [f"{n}-20250514" for n in sample] + [f"{n}-2025-05-14" for n in sample[:60]] + [n.upper() for n in sample[:40]]
    forms += [f"us.anthropic.{n}-v1:0" for n in sample[:30]] + [f"{n}@20250929" for n in sample[:30]]
    forms += [f"openrouter/{n}" for n in sample[:30]] + [f"anthropic/{n}" for n in sample[:30]] + [f"litellm/{n}" for n in sample[:20]]
    forms += [f"{n}-latest" for n in sample[:30]] + [f"{n}-preview" for n in sample[:30]]
    forms += [*CLAUDE_MODELS, "gpt-5-codex", "gpt-5.3-codex", "gpt-5.2-20251211", "gemini-2.5-pro", "claude-sonnet-4-5", "unknown",
              "no-such-model", "azure/gpt-4o", "bedrock/anthropic.claude-3-haiku-20240307-v1:0", ""]
    return sorted(set(literal)) + forms


@shipped
def test_every_name_resolves_as_the_library_resolves_it() -> None:
    assert TABLE is not None
    names = _names()
    differ = [n for n in names if TABLE.resolve(library._candidates(n)) != library._from_library(n)]
    assert differ == []
    assert sum(TABLE.resolve(library._candidates(n)) is not None for n in names) > len(names) // 2  # (most names are priced)


def test_the_table_stands_only_for_the_library_it_was_made_from(tmp_path: Path) -> None:
    version, data = library.version()[0], library.data_file()
    assert pricetable.load("0.0.0", data) is None
    other = tmp_path / "data.py"
    other.write_bytes(Path(data).read_bytes() + b"\n# another release\n")
    assert pricetable.load(version, str(other)) is None
    assert pricetable.load(version, str(tmp_path / "gone.py")) is None


def test_a_table_made_anew_is_the_shipped_one(tmp_path: Path) -> None:
    made = tmp_path / "pricetable.bin"
    library.build_table(str(made))
    if TABLE is None:
        pytest.skip("the installed genai-prices is not the one the shipped table was made from")
    assert made.read_bytes() == Path(pricetable.FILE).read_bytes()


@shipped
def test_a_first_run_prices_without_loading_the_library(tmp_path: Path) -> None:
    claude_tree(tmp_path / "home", seed=3, sessions=1, turns=3)
    status, loaded, proc = plain_run("usage", str(tmp_path / "home"), "--json", heavy=("genai_prices", "pydantic"))
    assert status in (0, None), proc.stderr
    assert loaded == []
    assert b'"cost_usd":null' not in proc.stdout
