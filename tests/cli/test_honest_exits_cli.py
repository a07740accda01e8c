"""Honest exits: a command that did nothing useful never says 0.

A ROOT with no session under it, stdout on a full disk or closed, a resume of an empty view,
an import that yields no conversation: each gets its documented exit code and one line.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from support import forked_cli
from support import FIXTURES, ROOT, cli

ROOT_COMMANDS = [
    ["inspect", "{R}"],
    ["inspect", "{R}", "--json"],
    ["repair", "{R}"],
    ["repair", "{R}", "--check"],
    ["repair", "{R}", "--dry-run"],
    ["compact", "{R}"],
    ["compact", "{R}", "--check"],
]


@pytest.mark.parametrize("args", ROOT_COMMANDS, ids=" ".join)
def test_a_root_holding_no_session_is_a_usage_error_unless_allowed(args: list[str], tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "not-a-session").mkdir(parents=True)
    (root / "not-a-session" / "notes.txt").write_text("hello\n")
    argv = [a.replace("{R}", str(root)) for a in args]
    proc = cli(*argv)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.splitlines() == [f"catty-ctx: error: no session under {root}, of catty-ctx or of an agent (Claude Code, Codex, opencode, Gemini CLI, Grok Build) (--allow-empty accepts an empty ROOT)"], err
    assert proc.stdout == b""
    allowed = cli(*argv, "--allow-empty")
    assert allowed.returncode == 0, allowed.stderr.decode()


def test_allow_empty_changes_nothing_for_a_root_with_sessions(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    shutil.copytree(FIXTURES / "sessions" / "demo", root / "demo")
    proc = cli("inspect", str(root), "--json", "--allow-empty")
    assert proc.returncode == 0 and len(orjson.loads(proc.stdout)["sessions"]) == 1


# -- a full or closed stdout ----------------------------------------------------------------

CLAUDE = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"


@pytest.fixture(scope="module")
def rich_session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A session with a segment and a blob, under a ROOT, so every command has something to print."""
    root = tmp_path_factory.mktemp("out")
    s = root / "sessions" / "s"
    shutil.copytree(FIXTURES / "sessions" / "demo", s)
    cli("compact", str(s), "--force", "--mode", "segments", check=True)
    big = orjson.dumps({"kind": "message", "id": "big", "role": "user", "text": "words " * 20_000}) + b"\n"
    handle = orjson.loads(cli("append", str(s), input=big, check=True).stdout)["blob"]
    (root / "AGENTS.md").write_text("Be brief.\n")
    return {"S": str(s), "R": str(root / "sessions"), "H": handle, "T": str(root), "LOG": (s / "updates.jsonl").read_text()}


STDOUT_COMMANDS = [
    ["--version"],
    ["--help"],
    ["inspect", "--help"],
    ["inspect", "{S}"],
    ["inspect", "{S}", "--items"],
    ["inspect", "{S}", "--seq", "1"],
    ["inspect", "{S}", "--context"],
    ["inspect", "{R}"],
    ["inspect", "-"],
    ["prune", "{S}"],
    ["resume", "{S}"],
    ["resume", "{S}", "--format", "anthropic"],
    ["repair", "{S}", "--check", "--json"],
    ["repair", "-"],
    ["compact", "{S}", "--dry-run", "--force", "--json"],
    ["fork", "{S}", "{T}/child-{N}", "--json"],
    ["import", "claude", str(CLAUDE)],
    ["append", "--create", "{T}/new-{N}"],
    ["segment", "list", "{S}"],
    ["segment", "grep", "{S}", "user"],
    ["segment", "show", "{S}", "0"],
    ["usage", "{S}"],
    ["usage", "{S}", "--by", "day", "--json"],
    ["blob", "{S}", "{H}"],
    ["instructions", "--json"],
    ["completion", "bash"],
]


def _run_with_stdout(args: list[str], paths: dict[str, str], how: str, n: int) -> subprocess.CompletedProcess[bytes]:
    """A process of its own (forked from one that has imported the libraries: tests/support/forked_cli.py)
    with stdout on a full disk or closed."""
    argv = [a.format(N=f"{how}-{n}", **paths) for a in args]
    stdin = paths["LOG"].encode() if "-" in args else b'{"kind":"message","id":"m9","role":"user","text":"hi"}\n'
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [*forked_cli.command(forked_cli.LIBRARIES), *argv]
    if how == "full":
        with open("/dev/full", "wb") as full:
            return subprocess.run(cmd, input=stdin, stdout=full, stderr=subprocess.PIPE, env=env, cwd=paths["T"], timeout=120)
    return subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=paths["T"], timeout=120,
                          preexec_fn=lambda: os.close(1))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("how", ["full", "closed"])
@pytest.mark.parametrize("n,args", list(enumerate(STDOUT_COMMANDS)), ids=[" ".join(a) for a in STDOUT_COMMANDS])
def test_output_that_cannot_be_written_is_exit_73_in_one_line(how: str, n: int, args: list[str], rich_session: dict[str, str]) -> None:
    proc = _run_with_stdout(args, rich_session, how, n)
    err = proc.stderr.decode()
    assert proc.returncode == 73, err
    assert err.splitlines()[-1].startswith("catty-ctx: error: cannot write output ("), err
    assert "Traceback" not in err and "Exception ignored" not in err


def test_a_reader_that_goes_away_is_not_an_error(tmp_path: Path) -> None:
    """EPIPE stays quiet, as in `| head`: the writer stops with no message and exit 0."""
    events = [{"v": 1, "seq": 0, "ts": "2026-11-01T00:00:00.000Z", "kind": "session", "session_id": "s"}]
    events += [{"v": 1, "seq": i, "ts": "2026-11-01T00:00:01.000Z", "kind": "message", "id": f"m{i}", "role": "user", "text": "x" * 200} for i in range(1, 3000)]
    stream = tmp_path / "stream.jsonl"
    stream.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))  # far more than a pipe holds
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(stream, "rb") as stdin:
        producer = subprocess.Popen([sys.executable, "-m", "catty_ctx", "repair", "-"], stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env)
    assert producer.stdout is not None and producer.stderr is not None
    assert producer.stdout.read(10)
    producer.stdout.close()  # the reader goes away before the output is done
    err = producer.stderr.read()
    assert producer.wait(timeout=120) == 0 and err == b"", err


# -- nothing to import, nothing to resume ----------------------------------------------------

CODEX = next((FIXTURES / "import" / "codex" / "sessions").rglob("*.jsonl"))
GEMINI = next((FIXTURES / "import" / "gemini" / "tmp").rglob("*.jsonl"))
EMPTY_SOURCES = {
    # format: (file name, bytes) of a source that holds a session but no conversation
    "claude": ("c.jsonl", b'{"type":"summary","summary":"old","leafUuid":"u9"}\n'
               b'{"parentUuid":null,"sessionId":"s-1","type":"system","uuid":"u1","timestamp":"2026-10-01T10:00:00.000Z","content":"started"}\n'),
    "codex": ("rollout.jsonl", CODEX.read_bytes().splitlines(keepends=True)[0]),
    "gemini": ("g.jsonl", GEMINI.read_bytes().splitlines(keepends=True)[0]),
    "openai": ("o.json", b'{"messages": [{"role": "system", "content": "Be brief."}]}'),
    "anthropic": ("a.json", b'{"system": "Be brief.", "messages": [{"role": "user", "content": []}]}'),
}


@pytest.mark.parametrize("fmt", sorted(EMPTY_SOURCES))
def test_an_import_with_no_conversation_is_exit_65_and_writes_nothing(fmt: str, tmp_path: Path) -> None:
    name, data = EMPTY_SOURCES[fmt]
    source = tmp_path / name
    source.write_bytes(data)
    for extra in ([], ["--out", str(tmp_path / "out")], ["--out", str(tmp_path / "out"), "--dry-run"]):
        proc = cli("import", fmt, str(source), *extra)
        err = proc.stderr.decode()
        assert proc.returncode == 65 and proc.stdout == b"", err
        assert err.splitlines() == [f"catty-ctx: error: no conversation in {source} (no message or tool call to import); nothing was written"]
        assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no session, no staging folder


GEMINI_PROMPT_LOG = orjson.dumps([{"sessionId": "7f0e2c1a-0000-4000-8000-000000000001", "messageId": 0, "type": "user", "message": "hi",
                                   "timestamp": "2026-10-01T10:00:00.000Z"}])  # Gemini CLI's tmp/<hash>/logs.json


@pytest.mark.parametrize("command", [["import", "auto", "FILE"], ["import", "gemini", "FILE"], ["inspect", "FILE"], ["report", "-o", "pages", "FILE"],
                                     ["search", "FILE", "hi"], ["export", "FILE"], ["repair", "--check", "FILE"]])
def test_gemini_prompt_log_named_is_one_right_explanation(command: list[str], tmp_path: Path) -> None:
    """Gemini CLI's logs.json (the prompts typed) named alone: one line saying what it is, not
    "invalid JSON" nor "not an OpenAI messages array"; exit 65, nothing written."""
    source = tmp_path / "logs.json"
    source.write_bytes(GEMINI_PROMPT_LOG)
    proc = cli(*(str(source) if a == "FILE" else a for a in command), cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 65 and proc.stdout == b"", err
    assert err.splitlines() == [f"catty-ctx: error: no conversation in {source} (Gemini CLI's log of the prompts typed; "
                                "its conversations are the chats/session-* files); nothing was written"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs.json"]


def test_usage_of_a_gemini_prompt_log_named_is_no_agents_log(tmp_path: Path) -> None:
    """`usage` reads calls, and logs.json holds none: named alone it is refused as no agent's log
    (65, one line), not taken for a Claude Code transcript of one bad line and an empty ledger."""
    source = tmp_path / "logs.json"
    source.write_bytes(GEMINI_PROMPT_LOG)
    proc = cli("usage", str(source))
    err = proc.stderr.decode()
    assert proc.returncode == 65 and proc.stdout == b"", err
    assert err.splitlines() == [f"catty-ctx: error: {source}: not a Claude Code, Codex, opencode, Gemini CLI, Grok Build or catty-ctx log"]


@pytest.mark.parametrize("fmt", ["items", "openai", "anthropic"])
def test_resume_of_an_empty_view_is_exit_65(fmt: str, tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", check=True)
    system = orjson.dumps({"kind": "message", "id": "p", "role": "system", "text": "Be brief."}) + b"\n"
    for _ in range(2):  # no event at all, then a system prompt alone
        proc = cli("resume", str(s), "--format", fmt)
        assert proc.returncode == 65 and proc.stdout == b"", proc.stderr
        assert proc.stderr.decode().splitlines() == [f"catty-ctx: error: {s / 'updates.jsonl'}: no conversation to resume (the view holds no message)"]
        cli("append", str(s), "-q", input=system, check=True)


# -- one mode for everything a command creates -----------------------------------------------


def _under_umask(mask: int, *args: str, input: bytes = b"", cwd: Path | None = None) -> None:
    """A process of its own (tests/support/forked_cli.py: the launcher hands its umask over) under MASK."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([*forked_cli.command(forked_cli.LIBRARIES), *args], input=input, capture_output=True, env=env, cwd=cwd,
                          timeout=120, preexec_fn=lambda: os.umask(mask))
    assert proc.returncode == 0, proc.stderr.decode()


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_every_file_and_folder_a_command_creates_gets_the_umasks_mode(mask: int, tmp_path: Path) -> None:
    s = tmp_path / "s"
    big = orjson.dumps({"kind": "message", "id": "u1", "role": "user", "text": "words " * 20_000}) + b"\n"
    _under_umask(mask, "append", "--create", str(s), "-q", input=big)  # session folder, log, summary, blobs/
    answer = orjson.dumps({"kind": "message", "id": "a1", "role": "assistant", "text": "done"}) + b"\n"
    _under_umask(mask, "append", str(s), "-q", input=answer)
    _under_umask(mask, "compact", str(s), "--force", "--mode", "segments")  # segments/, compaction_requests/
    with open(s / "updates.jsonl", "ab") as f:
        f.write(b"not an event\n")
    _under_umask(mask, "repair", str(s))  # quarantine/, and the log rewritten without the line
    _under_umask(mask, "fork", str(s), str(tmp_path / "child"))
    claude = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
    _under_umask(mask, "import", "claude", str(claude), "--out", str(tmp_path / "imported"))
    files, dirs = {}, {}
    for top in (s, tmp_path / "child", tmp_path / "imported"):
        dirs[str(top)] = top.stat().st_mode & 0o777
        for p in top.rglob("*"):
            if p.name.endswith(".lock"):
                continue  # the lock file's mode is the lock library's
            (dirs if p.is_dir() else files)[str(p.relative_to(tmp_path))] = p.stat().st_mode & 0o777
    for must in ("s/updates.jsonl", "s/summary.json", "s/segments/segment_000.md", "s/quarantine/index.jsonl", "child/summary.json", "imported/summary.json"):
        assert must in files, sorted(files)
    assert {k: oct(v) for k, v in files.items() if v != 0o666 & ~mask} == {}
    assert {k: oct(v) for k, v in dirs.items() if v != 0o777 & ~mask} == {}
