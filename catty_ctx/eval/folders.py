"""Where an eval works: `--out` (kept, new or empty) or a temporary folder (removed after)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import UsageError, WriteError


def work_folder(out: str | None) -> tuple[Path, bool]:
    """Where the copies go: OUT (kept; must be new or empty) or a temporary folder (removed)."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix="catty-ctx-eval-")), True
    p = Path(out)
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise UsageError(f"{out}: already exists and is not empty; eval writes its copies into a new folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"{out}: cannot create ({exc.strerror})") from None
    return p, False
