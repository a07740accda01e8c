"""A session or log at a URL read by the same code as a local one: fetched into a private
temporary folder, FN run on the copy, and every path its result and its warnings name put back
as the URL (the listing and fetching of URLs is `urls`)."""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from ..errors import CattyError
from .capture import capture_stderr
from .urls import fetch


def _renamed(value: Any, local: str, url: str) -> Any:
    """VALUE with the local copy's path put back as the URL, in every string it holds."""
    if isinstance(value, str):
        return value.replace(local, url)
    if isinstance(value, dict):
        return {k: _renamed(v, local, url) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_renamed(v, local, url) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _renamed(getattr(value, f.name), local, url)
                                            for f in dataclasses.fields(value) if f.init})
    return value


def on_copy(fn: Callable[..., Any], url: str, **kwargs: Any) -> Any:
    """FN(local copy of the session at URL, **kwargs), with the URL where the copy's path would show."""
    scratch = tempfile.mkdtemp(prefix="catty-ctx-url-")
    local = os.path.join(scratch, url.rstrip("/").rsplit("/", 1)[-1] or "session")
    try:
        fetch(url, local)
        with _stderr_renamed(local, url.rstrip("/")):
            try:
                return _renamed(fn(local, **kwargs), local, url.rstrip("/"))
            except CattyError as exc:
                raise CattyError(str(exc).replace(local, url.rstrip("/")), exit_code=exc.exit_code) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class _stderr_renamed:
    """What the readers warn about on stderr meanwhile names the URL, not the local copy (this thread only)."""

    def __init__(self, local: str, url: str) -> None:
        self.local, self.url = local, url

    def __enter__(self) -> None:
        self.capture = capture_stderr()
        self.written = self.capture.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.capture.__exit__(*exc)
        if self.written:
            sys.stderr.write("".join(self.written).replace(self.local, self.url))

