"""The one target resolver and the one ROOT walker (docs/architecture.md#formats-and-sources):
every command and the library classify a target by `sources.resolve` and walk a ROOT by
`sources.root_sessions`, so Python and the CLI see the same sessions."""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import orjson
import pytest
from support import FIXTURES, ROOT, cli

from catty_ctx.errors import UsageError
from catty_ctx.inspect.session import inspect_root
from catty_ctx.sources import NATIVE, ROOT as ROOT_KIND, SESSION, STDIN, resolve, root_sessions

CLAUDE = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"


def _mixed_root(tmp_path: Path) -> Path:
    """A ROOT of two catty sessions and a Claude Code transcript in a project folder."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "sessions" / "demo", root / "a" / "demo")
    shutil.copytree(FIXTURES / "sessions" / "dangling", root / "b" / "dangling")
    (root / "claude" / "-home-dev-shop").mkdir(parents=True)
    shutil.copy(CLAUDE, root / "claude" / "-home-dev-shop" / CLAUDE.name)
    return root


def test_each_form_of_target_is_classified_once(tmp_path: Path) -> None:
    root = _mixed_root(tmp_path)
    assert resolve("-").kind == STDIN
    assert resolve(root).kind == ROOT_KIND and resolve(root).is_root
    assert resolve(root / "a" / "demo").kind == SESSION
    assert resolve(root / "a" / "demo" / "updates.jsonl").kind == SESSION
    native = resolve(root / "claude" / "-home-dev-shop" / CLAUDE.name)
    assert native.kind == NATIVE and native.native is not None and native.native.format == "claude"


def test_inspect_root_in_python_and_inspect_root_on_the_command_line_list_the_same_sessions(tmp_path: Path) -> None:
    root = _mixed_root(tmp_path)
    errors: list[str] = []
    python = [row["path"] for row in inspect_root(root, on_error=lambda path, exc: errors.append(str(path)))]
    proc = cli("inspect", str(root), "--json")
    command = [row["path"] for row in orjson.loads(proc.stdout)["sessions"]]
    assert python == command and errors == []
    assert len(command) == 3 and any(p.endswith(CLAUDE.name) for p in command)


def test_the_walker_lists_catty_and_native_sessions_and_refuses_an_empty_root(tmp_path: Path) -> None:
    root = _mixed_root(tmp_path)
    found = [str(u) for u in root_sessions(root)]
    assert [Path(f).name for f in found] == ["demo", "dangling", CLAUDE.name]
    (tmp_path / "empty").mkdir()
    assert root_sessions(tmp_path / "empty", allow_empty=True) == []
    with pytest.raises(UsageError):
        root_sessions(tmp_path / "empty")


def test_no_module_but_sources_classifies_a_target_or_walks_a_root() -> None:
    """Nothing else asks whether a folder holds the log to decide ROOT or session, nor walks a
    tree for sessions (the layout's rule `session_dirs` is what the walkers share)."""
    offenders = []
    for path in sorted((ROOT / "catty_ctx").rglob("*.py")):
        rel = path.relative_to(ROOT / "catty_ctx").as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in ("is_root", "find_sessions", "root_sessions", "is_session_folder") and rel != "sources.py":
                offenders.append(f"{rel}: def {node.name}")
    assert offenders == []
