"""`catty-ctx blob`: print an externalised payload of a session in full."""
from __future__ import annotations

import shutil
import sys
from typing import Annotated

import typer

from . import app
from .errors import handle_errors


@app.command("blob", epilog="Example: catty-ctx blob S \"$(catty-ctx inspect S --seq 7 --json | jq -r .blob)\" | less")
@handle_errors
def blob_cmd(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="A session directory (or its updates.jsonl).")],
    handle: Annotated[str, typer.Argument(metavar="HANDLE", help="The blob's handle: 32 hex digits, as events and previews name it.")],
) -> None:
    """Print the payload a large message or tool output was moved to, byte for byte.

    Only a handle naming a regular file in this session's blobs/ is accepted (no paths,
    no symbolic links); a payload that no longer matches its handle is refused (exit 65).
    """

    # start-up: the library loads when the command runs, not for --help or another command
    from ..blobs import open_blob, session_directory

    with open_blob(session_directory(session), handle) as f:
        shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
    sys.stdout.flush()
