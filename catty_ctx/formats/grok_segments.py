"""Grok Build's own segments archive, read by `segment list|show|grep` (docs/import.md#grok-build).

Grok writes `compaction/segment_NNN.md` (its banner, statistics, curated summary and the
verbatim turns of the span a compaction folded) and a row per segment in
`compaction/INDEX.md` (`| Segment | File | Turns | Approx bytes | Keywords |`). The readers
take a catty segments folder, so the files are copied, byte for byte, into the private spool
of the native session (never beside the source) with an index.json made from grok's rows.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..session.segments import segments_dir, write_index
from . import grok as layout

_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(segment_\d{3,}\.md)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|(.*)\|\s*$")
_NAME = re.compile(r"^segment_(\d{3,})\.md$")


def index_rows(text: str) -> dict[int, dict[str, Any]]:
    """grok's INDEX.md rows by segment number."""
    rows = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            keywords = [k.strip().strip('"') for k in m.group(5).split(",") if k.strip().strip('"')]
            rows[int(m.group(1))] = {"segment": int(m.group(1)), "file": m.group(2), "turns": int(m.group(3)),
                                     "bytes": int(m.group(4)), "keywords": keywords}
    return rows


def grok_segments(log: str, spool: Path) -> Path | None:
    """SPOOL made a segments folder holding the grok segments of the session whose log is LOG
    (None: it has none)."""
    archive = Path(log).parent / layout.SEGMENTS_DIR
    if archive.is_symlink() or not archive.is_dir():
        return None
    files = sorted(p for p in archive.iterdir() if _NAME.match(p.name) and p.is_file() and not p.is_symlink())
    if not files:
        return None
    try:
        listed = index_rows((archive / "INDEX.md").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        listed = {}
    out = segments_dir(spool)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in files:
        number = int(_NAME.match(path.name).group(1))  # type: ignore[union-attr]  # filtered above
        data = path.read_bytes()
        (out / f"segment_{number:03d}.md").write_bytes(data)
        row = listed.get(number) or {"segment": number, "file": path.name, "turns": 0, "keywords": []}
        rows.append({**row, "file": f"segment_{number:03d}.md", "bytes": len(data)})
    write_index(out, rows)
    return spool
