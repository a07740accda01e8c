"""Record the scenarios (scenarios.py) with the pinned CLIs and store sanitised copies of what
they wrote under fixtures/agents/<cli>-<version>/ — the agents' own files of this release.

    python tests/agents/record_fixtures.py [claude codex grok]   (root: it makes a loopback namespace)

Sanitising replaces the run's temp folders with /home/user (HOME) and /home/user/project
(the working directory), in paths and in the project folder's slug; nothing else changes.
Each folder gets scenario.json: the CLI, the session id, the prompts typed (the tests read it).
"""
from __future__ import annotations

import re
from urllib.parse import quote
import shutil
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.anthropic_fake import FakeAnthropic
from agents.netns import LoopbackNamespace
from agents.openai_fake import FakeResponses
from agents.grok_scenarios import grok_session
from agents.runner import ROOT, Claude, Codex, Grok, locate, pinned_version, project_slug
from agents.scenarios import Written, claude_session, codex_session
from agents.xai_fake import FakeXai

OUT = ROOT / "fixtures" / "agents"
HOME, PROJECT = "/home/user", "/home/user/project"


def sanitise(data: bytes, home: Path, project: Path) -> bytes:
    text = data.decode()
    for real, fake in ((str(project), PROJECT), (project_slug(str(project)), project_slug(PROJECT)),
                       (quote(str(project), safe=""), quote(PROJECT, safe="")), (str(home), HOME)):
        text = text.replace(real, fake)
    text = re.sub(r"OS Version: [^\\\n\"]*", "OS Version: Linux", text)
    return text.encode()


def store(written: Written, folder: Path, relative: Path, home: Path, project: Path, cli: str) -> None:
    dest = folder / relative
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(sanitise(written.path.read_bytes(), home, project))
    manifest = {"cli": cli, "session_id": written.session_id, "file": str(relative), "prompts": written.prompts}
    (folder / "scenario.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"{dest.relative_to(ROOT)}: {dest.stat().st_size} bytes")


def store_grok(exe: Path, ns: LoopbackNamespace, tmp: Path) -> None:
    """The grok scenario's whole sessions folder (every session grok wrote, its own layout),
    as `.grok/sessions/...`; the derived search index (a database) left out."""
    home, project = tmp / "grok" / "home", tmp / "grok" / "project"
    project.mkdir(parents=True)
    folder = OUT / f"grok-{pinned_version('grok')}" / "tools-compactions-subagent-fork-cancel-rewind"
    shutil.rmtree(folder, ignore_errors=True)
    with FakeXai(ns.listen()) as server:
        w = grok_session(Grok(ns, server, exe, home, project))
    sessions = home / ".grok" / "sessions"
    for src in sorted(sessions.rglob("*")):
        if src.is_dir() or src.name.startswith("session_search.sqlite"):
            continue
        dest = folder / sanitise(str(src.relative_to(home)).encode(), home, project).decode()
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(sanitise(src.read_bytes(), home, project))
    main = next((folder / ".grok" / "sessions").glob(f"*/{w.session_id}/updates.jsonl")).relative_to(folder)
    manifest = {"cli": f"grok {pinned_version('grok')}", "session_id": w.session_id, "file": str(main),
                "prompts": w.prompts[w.session_id], "fork_id": w.fork_id, "child_id": w.child_id,
                "cancelled_id": w.cancelled_id, "single_id": w.single_id, "acp_id": w.acp_id, "home": ".grok",
                "sessions": w.prompts}
    (folder / "scenario.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"{folder.relative_to(ROOT)}: {sum(1 for _ in folder.rglob('*'))} files")


def main() -> None:
    agents = sys.argv[1:] or ["claude", "codex", "grok"]
    with LoopbackNamespace() as ns, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for agent in agents:
            exe, why = locate(agent)
            if exe is None:
                sys.exit(why)
            if agent == "grok":
                store_grok(exe, ns, tmp)
                continue
            home, project = tmp / agent / "home", tmp / agent / "project"
            project.mkdir(parents=True)
            version = pinned_version(agent)
            folder = OUT / f"{agent}-{version}" / "tools-resume-compactions"
            shutil.rmtree(folder, ignore_errors=True)
            if agent == "claude":
                with FakeAnthropic(ns.listen()) as server:
                    w = claude_session(Claude(ns, server, exe, home, project))
                rel = Path("projects") / project_slug(PROJECT) / w.path.name
            else:
                with FakeResponses(ns.listen()) as server:
                    w = codex_session(Codex(ns, server, exe, home, project))
                rel = w.path.relative_to(home / ".codex")
            store(w, folder, rel, home, project, f"{agent} {version}")


if __name__ == "__main__":
    main()
