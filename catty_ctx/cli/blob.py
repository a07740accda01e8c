"""`catty-ctx blob`: print an externalised payload of a session in full.

This command starts without the CLI framework (see `fastpath`): an agent fetches a payload a
placeholder names, and typer's import would be most of that run.
"""
from __future__ import annotations

import shutil

from ..session.blobs import open_blob, session_directory
from ..visible import end, stdout_binary
from .fastpath import declare as declare_command
from .fastpath import flag, parse_one

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARAMS = (flag("raw", "--raw", help="Write the bytes as they are on a terminal too (escape sequences and all)."),)
BLOB_DOC = """Print the payload a large message or tool output was moved to, byte for byte.

    Only a handle naming a regular file in this session's blobs/ is accepted (no paths,
    no symbolic links); a payload that no longer matches its handle is refused (exit 65).
    On a terminal, control characters are shown rather than obeyed unless --raw; in a pipe
    the bytes are always exact.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "session", "handle")


def declare() -> None:
    """Register `blob` on the typer application (help, completion, docs)."""
    arguments = {
        "session": ("SESSION", "A session directory (or its updates.jsonl)."),
        "handle": ("HANDLE", "The blob's handle: 32 hex digits, as events and previews name it."),
    }
    declare_command("blob", run, PARAMS, BLOB_DOC, "Example: catty-ctx blob S \"$(catty-ctx inspect S --seq 7 --json | jq -r .blob)\" | less",
                    arguments)


def run(session: str, handle: str, raw: bool = False) -> None:
    """Copy the payload HANDLE names in SESSION's blobs/ to stdout."""
    out = stdout_binary(raw=raw)
    with open_blob(session_directory(session), handle) as f:
        shutil.copyfileobj(f, out, 1 << 20)
    end(out)
