"""Every citation in the package points to a section of the repository's own docs: a reader
can follow each one without a document from outside."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "catty_ctx"
# docs/NAME.md, optionally #anchor, optionally more ", #anchor" of the same page.
CITATION = re.compile(r"docs/([\w.-]+\.md)((?:#[\w-]+)(?:, #[\w-]+)*)?")
# How the code once cited documents that are not in the repository.
OUTSIDE = re.compile(r"\bSPEC\b(?![A-Z_])(?!\")|\breference §?\d|weakness(?:es)? #\d|grok-build §|§\d")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page: explicit `<a id>`s and GitHub's slugs of its headings."""
    text = page.read_text(encoding="utf-8")
    found = set(re.findall(r'<a id="([\w-]+)"></a>', text))
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        plain = re.sub(r"<[^>]+>", "", heading).strip().lower()
        found.add(re.sub(r"[^\w\- ]", "", plain).replace(" ", "-"))
    return found


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_citation_in_the_code_names_a_page_and_section_that_exist() -> None:
    bad = []
    seen = 0
    for path in _sources():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITATION.finditer(line):
                seen += 1
                page = ROOT / "docs" / m.group(1)
                if not page.is_file():
                    bad.append(f"{path.relative_to(ROOT)}:{n}: no page {m.group(1)}")
                    continue
                for anchor in re.findall(r"#([\w-]+)", m.group(2) or ""):
                    if anchor not in anchors(page):
                        bad.append(f"{path.relative_to(ROOT)}:{n}: {m.group(1)} has no section #{anchor}")
    assert seen >= 40 and not bad, bad


def test_no_citation_points_outside_the_repository() -> None:
    bad = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
           for path in _sources()
           for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
           if OUTSIDE.search(line) and "metavar=\"SPEC\"" not in line]
    assert not bad, bad


def test_the_checker_finds_a_broken_anchor_and_an_outside_citation() -> None:
    assert "the-session-directory" in anchors(ROOT / "docs" / "spec.md") and "w1" in anchors(ROOT / "docs" / "design.md")
    assert "no-such-section" not in anchors(ROOT / "docs" / "spec.md")
    assert OUTSIDE.search('(SPEC "Events")') and OUTSIDE.search("reference 3.5") and OUTSIDE.search("weakness #3")
    assert not OUTSIDE.search("SPECS = {}") and not OUTSIDE.search("docs/spec.md#events")
