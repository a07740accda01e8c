"""recall_search with `scope: "all"`: every session of the project, not only this one
(docs/agents.md#the-recall-server), through `search` (and its index, when one covers the
agents' homes: `catty-ctx index`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..search import Query, search
from .recall import SEARCH_LIMIT, SEARCH_LIMIT_MAX, Recall, RecallError, agent_homes, claude_project_dirs, compile_pattern

LINE_CHARS = 240


def project_roots(cwd: Path) -> list[str]:
    """Where the sessions of CWD lie: its Claude Code project folders and the Codex homes' sessions."""
    roots = [d for d in claude_project_dirs(cwd) if d.is_dir()]
    roots += [h / "sessions" for h in agent_homes("codex") if (h / "sessions").is_dir()]
    return [str(r) for r in roots]


def search_project(cwd: Path, pattern: str, *, regex: bool, ignore_case: bool, limit: int) -> dict[str, Any]:
    """The matches of PATTERN in every session of CWD (a Codex rollout counts when it was started
    in CWD), best ranked first when the index is used; `more` when there are others."""
    if not 1 <= limit <= SEARCH_LIMIT_MAX:
        raise RecallError(f"limit must be 1..{SEARCH_LIMIT_MAX}, not {limit}")
    want = os.path.realpath(cwd)
    found: list[dict[str, Any]] = []
    more = False
    for m in search(project_roots(cwd), Query(pattern, regex=regex, ignore_case=ignore_case)):
        if m.agent == "codex" and os.path.realpath(m.cwd or "/") != want:
            continue
        if len(found) == limit:
            more = True
            break
        found.append({"session": m.session, "agent": m.agent, "date": m.date, "seq": m.seq, "role": m.role,
                      "line": m.line[:LINE_CHARS], "path": m.path})
    return {"scope": "all", "project": str(cwd), "matches": found, "more": more}


def recall_search(recall: Recall, pattern: str, *, regex: bool = False, ignore_case: bool = False, limit: int = SEARCH_LIMIT,
                  scope: str = "session") -> dict[str, Any]:
    """The recall_search tool: RECALL's session up to its last compaction (SCOPE "session"), or
    every session of its project (SCOPE "all")."""
    if scope == "session":
        return recall.search(pattern, regex=regex, ignore_case=ignore_case, limit=limit)
    if scope != "all":
        raise RecallError(f'scope must be "session" or "all", not {scope!r}')
    compile_pattern(pattern, regex, ignore_case)  # (a bad pattern is said as for the session)
    return search_project(Path(recall.cwd) if recall.cwd is not None else Path.cwd(), pattern, regex=regex, ignore_case=ignore_case,
                          limit=limit)
