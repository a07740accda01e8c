"""Announcement budgets: skills, the tool catalog and MCP servers are announced to the model
within a byte budget, and only what changed since the last announcement is announced again,
also across compactions."""
from __future__ import annotations

from typing import Any

from ..defaults import ANNOUNCE_SHARE, DESCRIPTION_LIMIT
from ..session.blobs import cut_head
from ..session.events import DEFAULT_WINDOW, Event

# DESCRIPTION_LIMIT: bytes per description (reference: skill listing); ANNOUNCE_SHARE: the
# whole listing's share of the window (tokens × 4 bytes). Both calibratable (defaults).
ANNOUNCED_FACETS = ("skills", "tools", "mcp")
_HEADINGS = {
    "skills": "Skills available (load one when the task calls for it):",
    "tools": "Tools available:",
    "mcp": "MCP servers connected:",
}

# What a model that needs an entry left out of a listing can do (the note says it once).
_HOW_TO_LIST = {
    "skills": "each is a folder with a SKILL.md: list the skills folders for the others",
    "tools": "the request's tool definitions name them all",
    "mcp": "list the configured MCP servers for the others",
}


def _skipped_note(facet: str, n: int) -> str:
    return f"({n} more {facet} not listed: over the announcement budget; {_HOW_TO_LIST[facet]})"


def clip(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes, cut on a character boundary, marked with … when cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return cut_head(data, max(0, limit - 3)).decode("utf-8") + "…"


def _entries(facet: str, value: Any) -> list[tuple[str, str]]:
    """(name, listing line) for each well-formed entry of an announced facet."""
    out: list[tuple[str, str]] = []
    if not isinstance(value, list):
        return out
    for e in value:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            continue
        name = e["name"]
        if facet == "mcp":
            tools = e.get("tools")
            names = [t if isinstance(t, str) else t.get("name", "") for t in tools if isinstance(t, (str, dict))] if isinstance(tools, list) else []
            desc = ", ".join(n for n in names if n)
        else:
            desc = " ".join(str(e.get("description") or "").split())
        line = f"- {name}: {clip(desc, DESCRIPTION_LIMIT)}" if desc else f"- {name}"
        if facet == "skills" and e.get("path"):
            line += f" ({e['path']})"
        out.append((name, line))
    return out


class Announcer:
    """What the model has been told about skills, tools and MCP servers, and what is new.

    The view feeds it the `state` events of those facets in order; it answers with a
    reminder item listing only entries that are new or changed (and those removed), within
    the budget. After a compaction `head` lists everything once for the rebuilt head, and
    what it listed counts as announced, so the events after the compaction do not repeat it.

    The budget is the view's, not each listing's: every listing spends from it. Entries that
    did not fit are announced once, as a count and how to list them; a later listing does not
    try them again (nor count them again) unless they change.
    """

    def __init__(self, window: int = DEFAULT_WINDOW, *, share: float = ANNOUNCE_SHARE) -> None:
        self.window = window
        self.share = share
        self.announced: dict[tuple[str, str], str] = {}  # (facet, name) -> line as listed
        self.unlisted: dict[tuple[str, str], str] = {}  # (facet, name) -> line counted as not listed
        self.spent = 0  # bytes of the listings so far

    @property
    def budget(self) -> int:
        """Bytes the whole listing may take: share × window tokens × 4 bytes a token."""
        return int(self.window * self.share * 4)

    def feed(self, ev: Event) -> dict[str, Any] | None:
        facet = ev.get("facet")
        if facet not in ANNOUNCED_FACETS:
            return None
        return self._listing({facet: ev.get("value")})

    def head(self, facets: dict[str, Any]) -> dict[str, Any] | None:
        """The listing for a rebuilt head: all current entries (nothing is announced yet)."""
        return self._listing({f: facets.get(f) for f in ANNOUNCED_FACETS if f in facets})

    def _listing(self, values: dict[str, Any]) -> dict[str, Any] | None:
        budget = self.budget - self.spent
        open_, close = "<system-reminder>", "</system-reminder>"
        used = len(open_) + len(close) + 2
        lines: list[str] = []
        for facet in ANNOUNCED_FACETS:
            if facet not in values:
                continue
            current = _entries(facet, values[facet])
            names = {n for n, _ in current}
            gone = sorted(n for (f, n) in self.announced if f == facet and n not in names)
            new = [(n, line) for n, line in current if self.announced.get((facet, n)) != line and self.unlisted.get((facet, n)) != line]
            for key in [k for k in self.unlisted if k[0] == facet and k[1] not in names]:
                del self.unlisted[key]
            section: list[str] = []
            skipped = 0
            heading = _HEADINGS[facet]
            reserve = len(_skipped_note(facet, len(new))) + 1  # room for the note, should one be needed
            for n, line in new:
                cost = len(line.encode("utf-8")) + 1 + (0 if section else len(heading.encode("utf-8")) + 1)
                if used + cost + reserve > budget:
                    skipped += 1
                    self.unlisted[(facet, n)] = line
                    continue
                self.unlisted.pop((facet, n), None)
                if not section:
                    section.append(heading)
                section.append(line)
                used += cost
                self.announced[(facet, n)] = line
            if skipped:
                note = _skipped_note(facet, skipped)
                section.append(note)
                used += len(note) + 1
            if gone:
                note = f"No longer available ({facet}): " + clip(", ".join(gone), DESCRIPTION_LIMIT)
                section.append(note)
                used += len(note.encode("utf-8")) + 1
                for n in gone:
                    del self.announced[(facet, n)]
            lines.extend(section)
        if not lines:
            return None
        self.spent += used
        return {"role": "user", "text": open_ + "\n" + "\n".join(lines) + "\n" + close, "synthetic": "announcement"}
