"""`catty-ctx completion SHELL`: print a completion script generated from the CLI itself."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import UsageError
from .app import app
from .docgen import SHELLS, completion
from .errors import handle_errors
from .fastpath import allow


@app.command(
    "completion",
    epilog=(
        "Examples: catty-ctx completion bash > ~/.local/share/bash-completion/completions/catty-ctx; "
        "catty-ctx completion zsh > ~/.zfunc/_catty-ctx; "
        "catty-ctx completion fish > ~/.config/fish/completions/catty-ctx.fish"
    ),
)
@handle_errors
def completion_cmd(
    shell: Annotated[str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.")],
) -> None:
    """Print the completion script for SHELL (the same file as completions/ in the source)."""

    if shell not in SHELLS:
        raise UsageError(f"unknown shell '{shell}' (choose bash, zsh or fish)")
    sys.stdout.write(completion(shell))


allow("completion", "shell", SHELLS)
