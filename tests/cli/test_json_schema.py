"""Every command's `--json` document against its schema in docs/json.md, key for key (issue 32
item 5): a key added, renamed or retyped fails here until the page says so."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

from support import FIXTURES, ROOT, cli

DOC = ROOT / "docs" / "json.md"


def schemas() -> dict[str, list[tuple[str, str]]]:
    """Each `## NAME` section's table as (key path, type) rows."""
    found: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].strip(), [])
            continue
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current is None or len(cells) < 2 or cells[0] in ("key", "") or set(cells[0]) <= {"-"}:
            continue
        current.append((cells[0], cells[1]))
    return found


SCHEMAS = schemas()
SIMPLE: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "any": lambda v: True,
}


def conforms(value: Any, typ: str, where: str) -> None:
    options = [t.strip() for t in typ.split(" or ")]
    problems = []
    for option in options:
        try:
            if option.startswith("array of "):
                assert isinstance(value, list), f"{where}: not an array"
                for i, each in enumerate(value):
                    check(each, option[len("array of "):], f"{where}[{i}]")
            elif option.startswith("object of "):
                assert isinstance(value, dict), f"{where}: not an object"
                for k, each in value.items():
                    conforms(each, option[len("object of "):], f"{where}.{k}")
            else:
                assert option in SIMPLE, f"{where}: docs/json.md names an unknown type {option!r}"
                assert SIMPLE[option](value), f"{where}: {value!r} is not {option}"
            return
        except AssertionError as exc:
            problems.append(str(exc))
    raise AssertionError("; ".join(problems))


def check(doc: Any, name: str, where: str = "") -> None:
    """DOC against the schema NAME: exactly the keys listed at each level, each of its type."""
    rows = SCHEMAS[name]
    where = where or name
    by = doc.get("by") if isinstance(doc, dict) else None  # (usage: the row key `by` names)

    def level(obj: dict[str, Any], prefix: str, at: str) -> None:
        listed = {path[len(prefix):]: typ for path, typ in rows
                  if path.startswith(prefix) and "." not in path[len(prefix):] and "[]" not in path[len(prefix):]}
        if not listed:
            return
        keys = {by if k == "(by)" else k: typ for k, typ in listed.items()}
        assert set(obj) == set(keys), f"{at}: keys {sorted(obj)} but docs/json.md lists {sorted(keys)}"
        for key, typ in keys.items():
            value = obj[key]
            conforms(value, typ, f"{at}.{key}")
            name_in_doc = "(by)" if key == by and "(by)" in listed else key
            if isinstance(value, dict):
                level(value, f"{prefix}{name_in_doc}.", f"{at}.{key}")
            elif isinstance(value, list):
                for i, each in enumerate(value):
                    if isinstance(each, dict):
                        level(each, f"{prefix}{name_in_doc}[].", f"{at}.{key}[{i}]")

    assert isinstance(doc, dict), f"{where}: not an object"
    level(doc, "", where)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("json")
    root = base / "root"
    shutil.copytree(FIXTURES / "sessions", root)
    compacted = base / "compacted"
    shutil.copytree(FIXTURES / "sessions" / "demo", compacted)
    assert cli("compact", str(compacted), "--force", "--mode", "segments").returncode == 0
    return {"root": root, "demo": root / "demo", "compacted": compacted, "base": base}


def run(*args: str) -> Any:
    proc = cli(*args)
    assert proc.returncode in (0, 1), (args, proc.stderr)
    return orjson.loads(proc.stdout)


RUNS: list[tuple[str, Callable[[dict[str, Path]], list[str]]]] = [
    ("inspect S", lambda s: ["inspect", str(s["demo"])]),
    ("inspect S", lambda s: ["inspect", str(s["compacted"])]),
    ("inspect S", lambda s: ["inspect", str(s["root"] / "dangling")]),
    ("inspect ROOT", lambda s: ["inspect", str(s["root"])]),
    ("inspect S --items", lambda s: ["inspect", str(s["demo"]), "--items"]),
    ("inspect S --context", lambda s: ["inspect", str(s["demo"]), "--context"]),
    ("compact S", lambda s: ["compact", str(s["demo"]), "--check"]),
    ("compact ROOT --check", lambda s: ["compact", str(s["root"]), "--check"]),
    ("repair S", lambda s: ["repair", str(s["root"] / "dangling"), "--check"]),
    ("repair ROOT", lambda s: ["repair", str(s["root"]), "--check"]),
    ("segment list", lambda s: ["segment", "list", str(s["compacted"])]),
    ("segment grep", lambda s: ["segment", "grep", str(s["compacted"]), "pytest"]),
    ("usage", lambda s: ["usage", str(s["demo"])]),
    ("usage", lambda s: ["usage", str(s["demo"]), "--by", "day"]),
    ("usage", lambda s: ["usage", str(s["root"]), "--by", "session"]),
    ("usage --by block", lambda s: ["usage", str(s["root"]), "--by", "block"]),
    ("search", lambda s: ["search", str(s["root"]), "pytest"]),
    ("index", lambda s: ["index", str(s["root"])]),
    ("fork", lambda s: ["fork", str(s["demo"]), str(s["base"] / "fork-1")]),
    ("fork --to", lambda s: ["fork", str(s["demo"]), str(s["base"] / "fork-2"), "--to", "claude", "--dry-run"]),
    ("config show", lambda s: ["config", "show"]),
    ("instructions", lambda s: ["instructions", str(ROOT)]),
    ("eval", lambda s: ["eval", str(s["demo"])]),
    ("eval --native", lambda s: ["eval", "--native", str(FIXTURES / "agents")]),
]


@pytest.mark.parametrize(("name", "argv"), RUNS, ids=[f"{n}-{i}" for i, (n, _a) in enumerate(RUNS)])
def test_the_document_is_the_documented_schema(sessions: dict[str, Path], name: str, argv: Callable[[dict[str, Path]], list[str]]) -> None:
    args = argv(sessions)
    check(run(*args, "--json"), name)


def test_every_section_of_the_page_is_checked() -> None:
    assert {name for name, _ in RUNS} == set(SCHEMAS)


def test_the_compacted_session_shows_its_compaction_rows(sessions: dict[str, Path]) -> None:
    # (so the compactions[] keys above are checked on a real row, not an empty list)
    assert run("inspect", str(sessions["compacted"]), "--json")["compactions"]


def test_the_checker_catches_a_key_the_page_does_not_list() -> None:
    good = run("config", "show", "--json")
    check(good, "config show")
    with pytest.raises(AssertionError, match="keys"):
        check({**good, "extra": 1}, "config show")
    with pytest.raises(AssertionError, match="not string"):
        check({"settings": [{"name": 5, "value": 1, "source": "default"}]}, "config show")


def test_every_command_with_json_has_a_section() -> None:
    # the commands whose options declare --json (one grep of the CLI), each named by a section
    cli_dir = ROOT / "catty_ctx" / "cli"
    with_json = {p.stem.rstrip("_") for p in cli_dir.glob("*.py") if re.search(r"[\"']--json[\"']", p.read_text())}
    with_json -= {"options", "fastpath"}  # where the shared option itself is declared
    covered = {name.split()[0] for name in SCHEMAS}
    assert with_json <= covered, with_json - covered
