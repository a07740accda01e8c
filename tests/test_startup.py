"""What the light runs load: `--version`, a plain `inspect` or `prune` of a catty session, the
status line, a hook with nothing to do. The parts they never need (the CLI framework, the
importers, the usage ledger, the compaction pipeline, databases, processes, locks, the network)
stay out of them; a module that imports one of these at its top would show here."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
from support import INSTALLED_PROGRAM, ROOT, installed_path, plain_run_loads

# Never loaded by a plain read of a catty session.
HEAVY = ("typer", "click", "rich", "catty_ctx.importers", "catty_ctx.usage", "catty_ctx.compact.pipeline", "catty_ctx.writeback",
         "catty_ctx.agents", "sqlite3", "subprocess", "filelock", "asyncio", "http.client", "ssl", "tomllib")


def _loaded_by(code: str, *args: str, input: bytes | None = None) -> tuple[int, list[str]]:
    """Run CODE (it ends by printing the sorted module names it loaded, as JSON, on stderr's last line)."""
    proc = subprocess.run([sys.executable, "-c", code, *args], input=input, capture_output=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, check=False)
    return proc.returncode, orjson.loads(proc.stderr.rstrip(b"\n").rpartition(b"\n")[2])


def test_version_loads_the_version_alone() -> None:
    code = ("import sys\nsys.argv = ['catty-ctx', '--version']\nfrom catty_ctx.__main__ import main\nmain()\n"
            "import json\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('catty_ctx'))), file=sys.stderr)")
    assert _loaded_by(code) == (0, ["catty_ctx", "catty_ctx.__main__", "catty_ctx._version"])


def test_a_plain_read_of_a_catty_session_loads_none_of_the_heavy_parts(demo: Path) -> None:
    for args in (("inspect", str(demo)), ("prune", str(demo), "--stats")):
        assert plain_run_loads(*args, heavy=HEAVY) == (0, []), args


def test_a_hook_with_nothing_to_do_loads_no_mirror_and_no_importer(tmp_path: Path) -> None:
    heavy = ("typer", "rich", "catty_ctx.agents.mirror", "catty_ctx.importers", "catty_ctx.session.store", "orjson", "tomllib", "subprocess")
    doc = orjson.dumps({"session_id": "s1", "source": "startup", "transcript_path": str(tmp_path / "none.jsonl")})
    assert plain_run_loads("hook", "claude", "session-start", "--mirrors", str(tmp_path / "m"), input=doc, heavy=heavy) == (0, [])


def test_the_status_line_loads_no_ledger_and_no_json_library_of_the_readers(tmp_path: Path) -> None:
    heavy = ("typer", "rich", "catty_ctx.usage", "catty_ctx.session.store", "orjson", "msgspec")
    doc = orjson.dumps({"session_id": "s1", "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet"},
                        "context_window": {"context_window_size": 200000}, "workspace": {"current_dir": str(tmp_path)}})
    assert plain_run_loads("statusline", input=doc, heavy=heavy) == (0, [])


PIPELINE = ("catty_ctx.compact.pipeline", "catty_ctx.compact.ladder", "catty_ctx.compact.summarizers", "catty_ctx.compact.twopass")


def test_segment_grep_and_the_pre_compact_hook_do_not_load_the_compaction_pipeline(tmp_path: Path) -> None:
    """The segments archive is the session wing's: reading it (segment grep) or writing one as
    the PreCompact hook does must not load the compaction pipeline."""
    from agents.test_agents_hooks import SID, Transcript, planted

    session = tmp_path / "s"
    shutil.copytree(ROOT / "fixtures" / "sessions" / "demo", session)
    assert plain_run_loads("compact", str(session), "--force", "--mode", "segments", heavy=PIPELINE)[0] == 0
    assert plain_run_loads("segment", "grep", str(session), "AssertionError", heavy=PIPELINE) == (0, [])
    (tmp_path / "proj").mkdir()
    t = Transcript(tmp_path / f"{SID}.jsonl")
    planted(t)
    payload = orjson.dumps({"session_id": SID, "transcript_path": str(t.path), "cwd": str(tmp_path / "proj"),
                            "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""})
    mirrors = tmp_path / "mirrors"
    assert plain_run_loads("hook", "claude", "pre-compact", "--mirrors", str(mirrors), input=payload, heavy=PIPELINE) == (0, [])
    assert (mirrors / "claude" / SID / "segments" / "segment_000.md").is_file()


def test_a_usage_question_asked_before_is_answered_before_the_cli_loads(tmp_path: Path) -> None:
    """The second `usage` of unchanged files prints the kept answer from the entry point: no module
    of the CLI but its reader of plain spellings and its way out, and none of enum, typing, re,
    datetime or a JSON library (run as installed: `-S`, the package folders on the path, so that no
    editable finder loads them first; what it loaded is told by -X importtime, as it may end with
    os._exit)."""
    from support.usage_trees import claude_tree

    claude_tree(tmp_path / "c", seed=2, projects=1, sessions=2, turns=4)
    code = INSTALLED_PROGRAM
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), TZ="UTC", PYTHONPATH=installed_path())
    runs = [subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", code, "usage", str(tmp_path / "c"), "--by", "day", "--json"],
                           capture_output=True, cwd=ROOT, env=env, timeout=120, check=False) for _ in range(2)]
    first, again = (orjson.loads(r.stdout) for r in runs)
    assert [r.returncode for r in runs] == [0, 0] and again == {**first, "files_parsed": 0, "bytes_parsed": 0}
    watched = ("typer", "msgspec", "orjson", "enum", "typing", "re", "datetime", "collections")
    names = [{line.rpartition("|")[2].strip() for line in r.stderr.decode().splitlines() if line.startswith("import time:")} for r in runs]
    loaded = [{m for m in got if m.split(".")[0] in watched or m.startswith("catty_ctx.cli")} for got in names]
    assert "catty_ctx.cli.app" in loaded[0]  # (the first run: the CLI's)
    assert sorted(loaded[1]) == ["catty_ctx.cli", "catty_ctx.cli.ending", "catty_ctx.cli.plain"]
