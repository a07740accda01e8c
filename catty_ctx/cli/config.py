"""`catty-ctx config show`: every tunable constant, its value, and where it came from."""
from __future__ import annotations

from .. import defaults
from ..errors import UsageError
from .fastpath import declare as declare_command
from .fastpath import parse_one, shared
from .output import Column, rows_out

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARAMS = (shared("as_json"),)
CONFIG_DOC = """Show every tunable constant (thresholds, caps, budgets, pruning's knobs), its value
    and where it came from: `default`, or the config file that set it.

    The file is TOML, read once per run: `--config FILE` on any command, else
    $XDG_CONFIG_HOME/catty-ctx/config.toml. Its keys are the names shown here
    (`default_threshold = 80`); a file with an unknown key or a value of the wrong type is
    refused whole (exit 65) by every command. The defaults are one runtime's choices:
    calibrate them on your own sessions (`catty-ctx inspect ROOT`).
    """
EPILOG = """Examples:
catty-ctx config show
catty-ctx config show --json | jq '.settings[] | select(.source != "default")'
catty-ctx --config team.toml compact ~/sessions --check"""
_COLUMNS = [Column("name", "id"), Column("value"), Column("source", "path")]


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "action")


def declare() -> None:
    """Register `config` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("config", run, PARAMS, CONFIG_DOC, EPILOG, {"action": ("ACTION", "show: list the settings.", ("show",))})


def run(action: str, as_json: bool = False) -> None:
    """Print the settings (ACTION is `show`)."""
    if action != "show":
        raise UsageError(f"unknown config action '{action}' (show)")
    rows = ({"name": n.lower(), "value": getattr(defaults, n), "source": defaults.SOURCES[n]} for n in defaults.TUNABLE)
    rows_out(rows, _COLUMNS, as_json=as_json, key="settings")
