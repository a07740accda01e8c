"""The typer forms of the options and arguments several commands share (their records: `fastpath.SHARED`)."""
from __future__ import annotations

from typing import Annotated

import typer

from .fastpath import SHARED, typer_option

SessionArg = Annotated[
    str,
    typer.Argument(metavar="SESSION", help="A session directory, an updates.jsonl file, or - for an event stream on stdin."),
]
TargetArg = Annotated[
    str,
    typer.Argument(metavar="SESSION|ROOT", help="A session directory, an updates.jsonl file, - for stdin, or a ROOT folder holding sessions at any depth."),
]


# The shared options (fastpath.SHARED) for the commands typer parses alone.
JsonOpt = typer_option(SHARED["as_json"])
LockTimeoutOpt = typer_option(SHARED["lock_timeout"])
MaxUserBytesOpt = typer_option(SHARED["max_user_bytes"])
MaxToolBytesOpt = typer_option(SHARED["max_tool_bytes"])
DryRunOpt = typer_option(SHARED["dry_run"])
AllowEmptyOpt = typer_option(SHARED["allow_empty"])
SchedulerOpt = typer_option(SHARED["scheduler"], optional=True)
ConnectTimeoutOpt = typer_option(SHARED["connect_timeout"])
AllowRemoteWritesOpt = typer_option(SHARED["allow_remote_writes"])
AgentOpt = typer_option(SHARED["agent"], optional=True)
