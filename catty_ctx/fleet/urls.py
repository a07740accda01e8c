"""ROOTs named by fsspec URLs (`s3://bucket/agents`, `gs://…`, `file:///…`, `memory://…`) for the read-only commands.

The readers work on files; a URL's files are fetched, one session (or one log, for `usage`)
at a time, into a private temporary folder, read there by the same code as a local session,
and every path the readers report (rows, messages, warnings) names the URL again. Listing
a URL ROOT finds its sessions by the same rule as a local one (`layout.session_dirs`). fsspec (which
comes with the `dask` extra) and a scheme's own package (s3fs, gcsfs, …) are imported only
when a URL is given; a missing one is a usage error naming it.
"""
from __future__ import annotations

import os

from ..errors import UsageError
from ..session.layout import LOG_NAME, session_dirs
from .urlname import is_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for URL; a missing package is a usage error naming it."""
    scheme = url.partition("://")[0]
    try:
        import fsspec
        from fsspec.registry import known_implementations
    except ImportError:
        raise UsageError(f"{url}: URLs need the package fsspec (it comes with the extra catty-ctx[dask])") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        known = known_implementations.get(scheme, {})
        package = str(known.get("class", scheme)).split(".")[0]
        raise UsageError(f"{url}: {scheme}:// URLs need the package {package} (pip install {package})") from None
    except ValueError:
        raise UsageError(f"{url}: unknown URL scheme '{scheme}'") from None


def refuse_writes(target: str, command: str) -> None:
    """Writers work on sessions on disk under their lock; a URL ROOT is only read."""
    if is_url(target):
        raise UsageError(f"{target}: {command} reads a URL ROOT but does not write it: use --check or --dry-run")


def _parts(path: str) -> tuple[str, ...]:
    return tuple(path.strip("/").split("/"))


def url_sessions(url: str) -> list[str]:
    """The session URLs (folders holding updates.jsonl) under URL, by `layout.session_dirs`'s rule."""
    fs, root = filesystem(url)
    if not fs.isdir(root):
        raise UsageError(f"{url}: no such folder")
    return [_under(url, root, folder) for folder in session_dirs(fs.walk(root))]


def _under(url: str, root: str, path: str) -> str:
    """PATH (inside ROOT, which URL names) as a URL spelled as the user spelled URL."""
    rel = path[len(root.rstrip("/")):].strip("/")
    return url.rstrip("/") + "/" + rel if rel else url


def url_is_root(url: str) -> bool:
    """True for a URL naming a folder of sessions; one session, or nothing, is a usage error (a URL names a ROOT)."""
    fs, root = filesystem(url)
    if not fs.isdir(root):
        raise UsageError(f"{url}: no such folder")
    if fs.isfile(root.rstrip("/") + "/" + LOG_NAME):
        raise UsageError(f"{url}: a URL names a ROOT of sessions, not one session (give its parent folder)")
    return True


def url_logs(url: str) -> list[tuple[str, int, int]]:
    """(URL, size, mtime in ns or 0) of every *.jsonl log (and compressed Codex rollout) under URL
    (a file URL: itself), a session's own folders left out as `usage`'s walk leaves them out."""
    fs, root = filesystem(url)
    if fs.isfile(root):
        return [(url, int(fs.size(root)), 0)]
    if not fs.isdir(root):
        raise UsageError(f"{url}: no such file or directory")
    found = fs.find(root, detail=True)
    sessions = {p.rsplit("/", 1)[0] for p in found if p.rsplit("/", 1)[-1] == LOG_NAME}
    out = []
    for path in sorted(found, key=_parts):
        if not path.endswith(".jsonl") and not (path.endswith(".jsonl.zst") and path.rsplit("/", 1)[-1].startswith("rollout-")):
            continue  # (Codex compresses a rollout untouched for a week: read whole through zstd, as on disk)
        folder = path.rsplit("/", 1)[0]
        if any((folder == s and path.rsplit("/", 1)[-1] != LOG_NAME) or folder.startswith(s + "/") for s in sessions):
            continue
        info = found[path]
        mtime = info.get("mtime") or info.get("LastModified") or info.get("updated") or info.get("created") or 0
        out.append((_under(url, root, path), int(info.get("size") or 0), _ns(mtime)))
    return out


def _ns(stamp: Any) -> int:
    if hasattr(stamp, "timestamp"):
        return int(stamp.timestamp() * 1e9)
    try:
        return int(float(stamp) * 1e9)
    except (TypeError, ValueError):
        return 0


def fetch(url: str, dest: str) -> None:
    """Copy URL (a file, or a folder and everything in it) to the local path DEST."""
    fs, path = filesystem(url)
    if fs.isdir(path):
        os.makedirs(dest, exist_ok=True)
        prefix = path.rstrip("/") + "/"
        for src in fs.find(path):
            local = os.path.join(dest, *src[len(prefix):].split("/"))
            os.makedirs(os.path.dirname(local), exist_ok=True)
            fs.get_file(src, local)
    else:
        fs.get_file(path, dest)
