"""Instruction discovery: global → repository root → DIR (deeper files win), recorded as the
`instructions` state facet, idempotently."""
from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .defaults import DEFAULT_LOCK_TIMEOUT
from .errors import UsageError
from .formats.ownership import require_ours
from .session.events import Event

if TYPE_CHECKING:
    from .session.store import Session


INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")
RULE_DIRS = (".claude/rules", ".cursor/rules")
RULE_SUFFIXES = (".md", ".mdc")


@dataclass(frozen=True)
class InstructionPart:
    path: str  # canonical path
    scope: str  # global | repo | dir
    order: int  # 1-based position in the prompt; later parts win on conflict
    text: str  # front matter stripped
    bytes: int  # size of the file on disk

    def as_state(self) -> dict[str, Any]:
        return {"path": self.path, "scope": self.scope, "order": self.order, "text": self.text}


@dataclass
class Discovery:
    directory: str
    root: str | None  # the repository root, when DIR is inside a git work tree
    parts: list[InstructionPart] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {path, reason}

    def state_value(self) -> list[dict[str, Any]]:
        return [p.as_state() for p in self.parts]


def global_instruction_files(env: dict[str, str] | None = None) -> list[Path]:
    """User-level files, in prompt order: the peers' first, catty-ctx's own last (it wins)."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    codex = Path(env.get("CODEX_HOME") or home / ".codex")
    own = config / "catty-ctx"
    return [codex / "AGENTS.md", home / ".claude" / "CLAUDE.md", own / "AGENTS.md", *_rule_files(own / "rules")]


def _rule_files(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if n.endswith(RULE_SUFFIXES)]


def _directory_files(folder: Path) -> list[Path]:
    files = [folder / n for n in INSTRUCTION_NAMES]
    for rules in RULE_DIRS:
        files.extend(_rule_files(folder / rules))
    return files


def find_repo_root(directory: Path) -> Path | None:
    """The nearest ancestor (or DIR itself) holding `.git`."""
    for folder in (directory, *directory.parents):
        if (folder / ".git").exists():
            return folder
    return None


def strip_front_matter(text: str) -> str:
    """Drop a leading `---` … `---` block (rule metadata, not instructions) and a BOM."""
    text = text.lstrip("\ufeff")
    if text.startswith("---") and text[3:4] in ("\n", "\r"):
        m = re.search(r"^---[ \t]*\r?$", text[4:], flags=re.MULTILINE)
        if m:
            text = text[4 + m.end():]
    return text.strip()


def git_ignored(root: Path, paths: list[Path]) -> tuple[set[Path], str | None]:
    """Which of `paths` git ignores in the work tree at `root` (one `git check-ignore` run).

    Returns the ignored set and, when git could not answer, why (then nothing is filtered).
    """
    if not paths:
        return set(), None
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-z", "--stdin"],
            input=b"\0".join(os.fsencode(p) for p in paths) + b"\0",
            capture_output=True,
            timeout=30,
        )
    except FileNotFoundError:
        return set(), "git is not installed"
    except subprocess.TimeoutExpired:
        return set(), "git check-ignore timed out"
    if proc.returncode not in (0, 1):
        first = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no reason given"])[0]
        return set(), f"git check-ignore failed: {first}"
    ignored = {Path(os.fsdecode(p)) for p in proc.stdout.split(b"\0") if p}
    return {p if p.is_absolute() else root / p for p in ignored}, None


def discover_instructions(
    directory: str | os.PathLike[str] = ".",
    *,
    include_global: bool = True,
    env: dict[str, str] | None = None,
) -> Discovery:
    """Instruction files for DIR in prompt order: global → repository root → … → DIR.

    In each folder: AGENTS.md, CLAUDE.md, then `.claude/rules/*`, `.cursor/rules/*` (sorted).
    Deeper folders come later so they win. Files git ignores are skipped, a file reached
    twice (a symbolic link, the same folder) counts once at its first place, empty files add
    nothing, and rule front matter is stripped.
    """
    start = Path(directory).resolve()
    if not start.is_dir():
        raise UsageError(f"{directory}: not a directory")
    root = find_repo_root(start)
    found = Discovery(directory=str(start), root=str(root) if root else None)
    candidates: list[tuple[str, Path]] = []
    if include_global:
        candidates.extend(("global", p) for p in global_instruction_files(env))
    chain = [start]
    if root is not None:
        chain = [root]
        for name in start.relative_to(root).parts:
            chain.append(chain[-1] / name)
    for folder in chain:
        scope = "repo" if root is not None and folder == root else "dir"
        candidates.extend((scope, p) for p in _directory_files(folder))
    existing = [(scope, p) for scope, p in candidates if p.is_file()]
    ignored: set[Path] = set()
    if root is not None:
        in_repo = [p for scope, p in existing if scope != "global"]
        ignored, problem = git_ignored(root, in_repo)
        if problem:
            found.skipped.append({"path": str(root), "reason": f"ignore rules not applied: {problem}"})
    seen: set[str] = set()
    for scope, path in existing:
        canon = os.path.realpath(path)
        if path in ignored:
            found.skipped.append({"path": str(path), "reason": "ignored by git"})
            continue
        if canon in seen:
            found.skipped.append({"path": str(path), "reason": f"same file as {canon}"})
            continue
        seen.add(canon)
        try:
            raw = Path(canon).read_bytes()
        except OSError as exc:
            found.skipped.append({"path": str(path), "reason": f"cannot read ({exc.strerror})"})
            continue
        text = strip_front_matter(raw.decode("utf-8", "replace"))
        if not text:
            found.skipped.append({"path": str(path), "reason": "empty"})
            continue
        found.parts.append(InstructionPart(canon, scope, len(found.parts) + 1, text, len(raw)))
    return found


def latest_facet(events: Iterable[Event], facet: str, *, agent: str | None = None) -> Event | None:
    """The latest `state` event of a facet (of the main loop unless `agent`)."""
    latest = None
    for ev in events:
        if ev["kind"] == "state" and ev.get("facet") == facet and ev.get("agent") == agent:
            latest = ev
    return latest


def record_instructions(session: Session, discovery: Discovery, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Event | None:
    """Append the `instructions` state unless the latest one already equals it (idempotent).

    Read and append happen under the session lock, so two runs at once append it once.
    """
    value = discovery.state_value()
    require_ours(session)
    with session.lock(lock_timeout):
        latest = latest_facet(session.events(warn=None), "instructions")
        if latest is not None and latest.get("value") == value:
            return None
        return session.append_locked([{"kind": "state", "facet": "instructions", "value": value}], warn=None)[0]
