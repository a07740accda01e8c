"""A new session (fork DEST, import --out DIR): built in a hidden staging folder beside it and
renamed into place whole (docs/reliability.md "Crashes"), its destination checked first."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import UsageError, WriteError
from .files import fsync_dir
from .layout import LOG_NAME, PART_NAME


def check_new_session_dest(dest: Path) -> None:
    """A new session (fork DEST, import --out) is never written through a symbolic link nor
    inside another session's folder (where it would change that session, and a ROOT walk,
    which never looks inside a session, would not find it)."""
    if dest.is_symlink():
        raise UsageError(f"{dest}: is a symbolic link; a new session is never written through one")
    for parent in Path(os.path.realpath(dest)).parents:
        if (parent / LOG_NAME).is_file():
            raise UsageError(f"{dest}: lies inside the session {parent}; put the new session beside it")


def place_new_session(staging: Path, dest: Path) -> None:
    """Move a fully built session from its staging folder to DEST (absent or empty), durably:
    its log part (fsynced by the builder) becomes its log, then the folder is renamed. A crash
    before the rename leaves only the hidden staging folder, after it a whole session. (A
    folder cannot go through `replace_file`: this is the one other rename of the package.)"""
    os.rename(staging / PART_NAME, staging / LOG_NAME)
    fsync_dir(staging)
    if dest.is_dir():
        dest.rmdir()  # empty (callers check): rename cannot replace a folder everywhere
    place_folder(staging, dest)


def place_folder(staging: Path, dest: Path) -> None:
    """A fully built folder (its files fsynced) renamed to DEST, which callers have seen absent,
    then DEST's parent fsynced: the one rename of a folder (also another agent's new session,
    `writeback.place_new_folder`)."""
    os.rename(staging, dest)
    fsync_dir(dest.parent)


@contextmanager
def building(staging: Path, dest: Path, failure: str, *, made: list[Path] | None = None) -> Iterator[None]:
    """Build a new session in its STAGING folder: whatever fails, the folder goes (no half
    session is left behind), and the parent folders the command made for it (MADE, see
    `missing_parents`) go too; an OSError becomes `DEST: FAILURE (reason)` (exit 73)."""
    try:
        yield
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        remove_made(made or [])
        raise WriteError(f"{dest}: {failure} ({exc.strerror})") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        remove_made(made or [])
        raise


def missing_parents(folder: Path) -> list[Path]:
    """FOLDER and those of its parents that do not exist yet, deepest first: what a
    `mkdir(parents=True)` of it makes, and what a failed command removes again."""
    out: list[Path] = []
    for p in (folder, *folder.parents):
        if os.path.lexists(p):
            break
        out.append(p)
    return out


def remove_made(made: list[Path]) -> None:
    """Remove the folders of MADE (deepest first) that are still empty; anything else stays."""
    for p in made:
        try:
            os.rmdir(p)
        except OSError:
            return


# The longest name a staging folder adds to DEST's (`.NAME.importing-XXXXXXXX.tmp`, `.NAME.fork-…-PID.tmp`).
_STAGING_EXTRA = 40


def check_dest_name(dest: Path) -> None:
    """A new session's name must leave room for its staging folder's within the file system's
    name limit, and its path within the path limit: a usage error (exit 2), never a crash."""
    name = os.fsencode(dest.name)
    try:
        limit = os.pathconf(dest.parent if dest.parent.is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if len(name) + _STAGING_EXTRA > limit:
        raise UsageError(f"{os.fsdecode(name[:40])}…: a destination name of {len(name)} bytes is too long "
                         f"(at most {limit - _STAGING_EXTRA} here)")
    if any(len(os.fsencode(part)) > limit for part in dest.parts) or len(os.fsencode(os.path.abspath(dest))) > 4000:
        raise UsageError(f"{os.fsdecode(name[:40])}…: the destination path is too long")
