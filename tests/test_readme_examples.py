"""Every example of the README runs (issue "right answers on real homes", Deliver 5).

Each command line of its `sh`, `cron` and `python` blocks is run here, offline, on the bundled
fixtures, or is named in SKIPPED with the reason it cannot be (a network model, an install, a
program the user supplies). Its placeholders stand for a sandbox built of the fixtures: `S` the
import of a recorded Claude Code session (four turns, two compactions), `ROOT`, `sessions/` and `~/sessions` copies of fixtures/sessions,
`~` a HOME holding the recorded Claude Code, Codex and Grok Build sessions of fixtures/agents.
A line added to the README is run, or this test fails until it is classified. The opening block,
the tour and the pipes run verbatim in test_readme.py.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support import FIXTURES, ROOT

from catty_ctx.formats.roots import NativeSource, walk

AGENTS = FIXTURES / "agents"
VERBATIM = ("```sh\npip install . && catty-ctx", "## A tour", "## Pipes")  # (run by test_readme.py)

# Lines that cannot run here, by how they begin, and why.
SKIPPED = {
    "pip install '.[mcp]'": "installs the package (the install line's own test runs a wheel install)",
    "claude plugin marketplace add": "installs the plugin into Claude Code (tests/agents run the plugin in the real agent)",
    "codex plugin marketplace add": "installs the plugin into Codex (tests/agents run it in the real agent)",
    "catty-ctx compact S --force --summarizer openai:MODEL": "calls a model over the network",
    "catty-ctx compact --replay S/compaction_requests/ID.json --summarizer cmd:./try.sh": "replays a recorded compaction through the user's script",
    "catty-ctx compact ROOT --prefire --summarizer openai:MODEL": "calls a model over the network",
    "catty-ctx eval ~/sessions --summarizer extractive --summarizer 'cmd:ollama run llama3'": "runs ollama, a local model server",
    "catty-ctx eval ~/sessions --summarizer cmd:./my-model.sh": "runs the user's model script",
    "catty-ctx proxy &": "leaves a server running (tests/proxy run it against fake providers)",
    "catty-ctx inspect ~/.local/share/catty-ctx/proxy/claude/SESSION_ID": "needs a conversation recorded through the proxy",
    "catty-ctx resume S --agent ID": "ID is one of the session's subagents: the bundled catty sessions have none",
    "catty-ctx blob S 3f9c…": "3f9c… is a blob the session stored: the bundled catty sessions hold none",
    "man catty-ctx": "opens a pager (the man page itself is checked by the docgen test)",
}
# Lines whose exit may be a check's finding or grep's "nothing found" (1).
MAY_FIND = ("catty-ctx repair S --check", "catty-ctx compact ROOT --check", "catty-ctx segment grep", "catty-ctx search")


def _blocks() -> list[tuple[str, str]]:
    """(language, body) of each fenced block, but those test_readme.py runs verbatim."""
    text = (ROOT / "README.md").read_text()
    out = []
    for m in re.finditer(r"```(sh|cron|python)\n(.*?)```", text, re.S):
        heading = text.rfind("\n## ", 0, m.start())
        if any(text.startswith(v, m.start()) or text.startswith(v, heading + 1) for v in VERBATIM):
            continue
        out.append((m.group(1), m.group(2)))
    return out


def _commands(lang: str, body: str) -> list[str]:
    """The command lines of a block, without their trailing comments (and a cron line's schedule)."""
    lines = []
    for line in body.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if lang == "cron":
            line = line.split(None, 5)[5]
        lines.append(re.split(r"\s{2,}# ", line)[0].rstrip())
    return lines


def _sandbox(tmp_path: Path) -> tuple[Path, dict[str, str], list[tuple[str, str]]]:
    """(the folder the lines run in, their environment, the README's placeholders → this sandbox)."""
    home, work, bin_dir = tmp_path / "home", tmp_path / "work", tmp_path / "bin"
    for d in (home, work, bin_dir):
        d.mkdir()
    shutil.copytree(AGENTS / "claude-2.1.332/tools-resume-compactions/projects", home / ".claude/projects")
    (home / ".claude/settings.json").write_text("{}")
    shutil.copytree(AGENTS / "codex-0.171.0/tools-resume-compactions/sessions", home / ".codex/sessions")
    (home / ".codex/config.toml").write_text("")
    shutil.copytree(AGENTS / "grok-1.0.41/tools-compactions-subagent-fork-cancel-rewind/.grok", home / ".grok")
    for where in (home / "sessions", work / "sessions", work / "ROOT"):
        shutil.copytree(FIXTURES / "sessions", where)
    shutil.copyfile(next((home / ".codex/sessions").rglob("rollout-*.jsonl")), work / "rollout.jsonl")
    (work / "src/app").mkdir(parents=True)
    (work / "src/app/AGENTS.md").write_text("Run the tests before you push.\n")
    (work / "fixtures").symlink_to(FIXTURES)
    shim = bin_dir / "catty-ctx"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m catty_ctx "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHONPATH=str(ROOT), HOME=str(home), TMPDIR=str(tmp_path),
               XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"), XDG_CACHE_HOME=str(home / ".cache"))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GROK_HOME"):
        env.pop(name, None)
    claude = next((home / ".claude/projects").rglob("*.jsonl"))
    subprocess.run([sys.executable, "-m", "catty_ctx", "import", "claude", str(claude), "--out", str(work / "S")], env=env,
                   capture_output=True, check=True, timeout=120)
    grok = next(u for u in walk(home / ".grok") if isinstance(u, NativeSource)).path.parent
    places = [("~/.claude/projects/P/SESSION.jsonl", str(claude)), ("~/.claude/projects/P/ID.jsonl", str(claude)),
              ("~/.grok/sessions/B/ID", f"'{grok}'"), ("/srv/agent-sessions", "~/sessions"), ("/tmp/repair.txt", "repair.txt"),
              ('mail -s "catty-ctx: sessions need repair" ops', "cat"),  # (the mail it would send, printed)
              ("| less", "| cat")]
    return work, env, places


def _skipped(line: str) -> str | None:
    return next((why for start, why in SKIPPED.items() if line.startswith(start)), None)


def test_every_readme_line_is_run_or_named_with_why() -> None:
    lines = [line for lang, body in _blocks() for line in _commands(lang, body) if lang != "python"]
    assert len(lines) > 40
    used = {start for start in SKIPPED if any(line.startswith(start) for line in lines)}
    assert used == set(SKIPPED), f"SKIPPED names lines the README no longer has: {set(SKIPPED) - used}"


@pytest.mark.long
def test_the_readme_examples_run_on_the_bundled_fixtures(tmp_path: Path) -> None:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed (three of the lines pipe into it)")
    work, env, places = _sandbox(tmp_path)
    ran = 0
    for lang, body in _blocks():
        if lang == "python":
            code = body.replace('"/tmp/s"', repr(str(tmp_path / "library-session")))
            proc = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, timeout=120)
            assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr.decode()
            ran += 1
            continue
        for line in _commands(lang, body):
            if _skipped(line):
                continue
            script = line
            for placeholder, real in places:
                script = script.replace(placeholder, real)
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, capture_output=True, timeout=300)
            err = proc.stderr.decode("utf-8", "replace")
            allowed = (0, 1) if line.startswith(MAY_FIND) else (0,)
            assert proc.returncode in allowed, (line, script, proc.returncode, err)
            assert "Traceback" not in err and "internal error" not in err, (line, err)
            ran += 1
    assert ran > 30
    # what the lines wrote is there: the cron mail's text, the transcripts, a fork, the completions
    assert "torn" in (work / "repair.txt").read_text() and "dangling" in (work / "repair.txt").read_text()
    assert (work / "transcript.md").read_text().startswith("#") and "<script" not in (work / "t.html").read_text()
    assert (work / "S2/updates.jsonl").is_file() and (work / "S/eval.json").is_file()
    assert (Path(env["HOME"]) / ".zfunc/_catty-ctx").is_file()
