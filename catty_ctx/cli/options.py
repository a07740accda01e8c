"""Options shared by several commands, declared once (one source of truth for help and docs)."""
from __future__ import annotations

from typing import Annotated

import typer

from ..defaults import CONNECT_TIMEOUT_MIN

SessionArg = Annotated[
    str,
    typer.Argument(metavar="SESSION", help="A session directory, an updates.jsonl file, or - for an event stream on stdin."),
]
TargetArg = Annotated[
    str,
    typer.Argument(metavar="SESSION|ROOT", help="A session directory, an updates.jsonl file, - for stdin, or a ROOT folder holding sessions at any depth."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document (a terminal gets tables, a pipe JSON Lines).")]
LockTimeoutOpt = Annotated[
    float,
    typer.Option("--lock-timeout", metavar="SECONDS", min=0, help="Wait this long for the session lock, then exit 75."),
]
MaxUserBytesOpt = Annotated[
    int,
    typer.Option("--max-user-bytes", min=0, metavar="N", help="A user message longer than N bytes moves to blobs/ with its head and tail kept inline (0: never)."),
]
MaxToolBytesOpt = Annotated[
    int,
    typer.Option("--max-tool-bytes", min=0, metavar="N", help="A tool output longer than N bytes moves to blobs/ with its head and tail kept inline (0: never)."),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would be done; write nothing.")]
AllowEmptyOpt = Annotated[
    bool,
    typer.Option("--allow-empty", help="A ROOT holding no session is fine (exit 0); by default it is a usage error (exit 2)."),
]
# --scheduler and its companions (usage's typer-free table names them too, and takes their help from here).
SchedulerOpt = Annotated[str | None, typer.Option(
    "--scheduler", metavar="ADDRESS",
    help="Run the per-session work on a Dask cluster: a scheduler ADDRESS (tcp://host:8786), or local[:N] for a local cluster "
         "of N processes (default: CATTY_CTX_SCHEDULER; needs the extra catty-ctx[dask]).")]
ConnectTimeoutOpt = Annotated[float, typer.Option(
    "--connect-timeout", min=CONNECT_TIMEOUT_MIN, metavar="SECONDS",
    help="Give up on an unreachable --scheduler (or one with no worker) after this long: exit 69.")]
AllowRemoteWritesOpt = Annotated[
    bool,
    typer.Option("--allow-remote-writes", help="Let a writer run on a --scheduler cluster (the session lock is flock: a shared filesystem must honour it)."),
]
