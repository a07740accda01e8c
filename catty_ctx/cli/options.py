"""Options shared by several commands, declared once (one source of truth for help and docs)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

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
# --scheduler and its companions (the help texts live with the engine: usage's option table, loaded without typer, shares them).
from ..cluster import CONNECT_TIMEOUT_HELP, SCHEDULER_HELP  # noqa: E402
SchedulerOpt = Annotated[Optional[str], typer.Option("--scheduler", metavar="ADDRESS", help=SCHEDULER_HELP)]
ConnectTimeoutOpt = Annotated[float, typer.Option("--connect-timeout", min=0.1, metavar="SECONDS", help=CONNECT_TIMEOUT_HELP)]
AllowRemoteWritesOpt = Annotated[
    bool,
    typer.Option("--allow-remote-writes", help="Let a writer run on a --scheduler cluster (the session lock is flock: a shared filesystem must honour it)."),
]
