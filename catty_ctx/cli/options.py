"""The typer forms of the options and arguments several commands share (their records: `fastpath.SHARED`)."""
from __future__ import annotations

from typing import Annotated

import typer

from .fastpath import SESSION_ARG, SHARED, TARGET_ARG, typer_option

SessionArg = Annotated[str, typer.Argument(metavar=SESSION_ARG[0], help=SESSION_ARG[1])]
TargetArg = Annotated[str, typer.Argument(metavar=TARGET_ARG[0], help=TARGET_ARG[1])]


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
