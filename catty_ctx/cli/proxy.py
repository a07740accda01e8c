"""`catty-ctx proxy`: the context lifecycle in the request path of an agent (docs/proxy.md).

The server lives in `catty_ctx.proxy` and needs the extra `catty-ctx[proxy]`; it is imported
only when the command runs, so no other command pays for it.
"""
from __future__ import annotations

import os
import sys

from ..defaults import DEFAULT_THRESHOLD, PROXY_MAX_BODY_BYTES, PROXY_PORT, PROXY_PREFIRE_LEAD, PROXY_PREFIRE_WAIT, PROXY_PRUNE_HIGH_PERCENT, PROXY_PRUNE_LOW_PERCENT, PROXY_STEPS, PROXY_SUMMARIZER
from ..errors import UsageError
from .fastpath import declare as declare_command
from .fastpath import flag, parse_one, value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ANTHROPIC_URL = "https://api.anthropic.com"
OPENAI_URL = "https://api.openai.com"
AGENTS = ("claude", "codex")
STEPS = "Steps (all on by default)"

PARAMS = (
    value("listen", "--listen", metavar="HOST:PORT", help=f"Where to listen (default 127.0.0.1:{PROXY_PORT}; port 0: any free port, printed). "
          "An address other than loopback is refused without --allow-remote."),
    flag("allow_remote", "--allow-remote", help="Listen on an address other than loopback (a warning is printed)."),
    value("anthropic_upstream", "--anthropic-upstream", metavar="URL", help=f"Where Anthropic Messages requests go (default {ANTHROPIC_URL})."),
    value("openai_upstream", "--openai-upstream", metavar="URL", help=f"Where Responses, Chat Completions and other requests go (default {OPENAI_URL})."),
    value("root", "--root", metavar="DIR", help="Where the conversations are recorded, one session per agent session (default: catty-ctx/proxy under $XDG_DATA_HOME)."),
    value("window", "--window", kind=int, metavar="N", min=1, help="Every conversation's context window in tokens (default: the model's)."),
    value("threshold", "--threshold", kind=float, metavar="PCT", min=1, max=100, help=f"Compact a request at this % of the window (default {DEFAULT_THRESHOLD:g})."),
    value("summarizer", "--summarizer", metavar="SPEC", help="Who writes the compaction summaries: upstream (the client's own upstream, with the credentials and model of "
          f"the request that needs one), extractive, cmd:CMD or openai:MODEL (default {PROXY_SUMMARIZER})."),
    value("max_body_bytes", "--max-body-bytes", kind=int, metavar="BYTES", min=0,
          help=f"A request body longer than this passes through unprocessed (default {PROXY_MAX_BODY_BYTES:,})."),
    flag("no_repair", "--no-repair", help="Do not repair tool pairing in the request copy.", panel=STEPS),
    flag("no_prune", "--no-prune", help="Do not prune old tool results in the request copy.", panel=STEPS),
    flag("no_compact", "--no-compact", help="Never compact (nor prefire).", panel=STEPS),
    flag("no_prefire", "--no-prefire", help="Compact in one pass at the threshold, with no pass 1 started earlier.", panel=STEPS),
    flag("no_record", "--no-record", help="Record nothing and change nothing: a plain pass-through proxy.", panel=STEPS),
    value("print_env", "--print-env", metavar="AGENT", choices=AGENTS, help="Print the set-up for an agent (claude: the variable; codex: the config.toml block) and exit."),
)
DOC = """Run a local proxy that puts the context lifecycle in an agent's request path.

    Claude Code, Codex or any Anthropic / OpenAI client pointed at it gets the upstream's
    answers byte for byte, while each request copy is repaired, pruned and compacted before it
    is forwarded, and each conversation is recorded as a catty session under --root
    (AGENT/SESSION_ID) that every other command reads. See docs/proxy.md.
    """
EPILOG = ("Examples:\ncatty-ctx proxy &\neval \"$(catty-ctx proxy --print-env claude)\"\n"
          "catty-ctx proxy --print-env codex >> ~/.codex/config.toml\ncatty-ctx proxy --window 200000 --threshold 80 --no-prefire")


def parse_args(args: list[str]) -> dict[str, Any] | None:
    return parse_one(args, PARAMS)


def declare() -> None:
    declare_command("proxy", run, PARAMS, DOC, EPILOG, {})


def _address(listen: str | None) -> tuple[str, int]:
    if listen is None:
        return "127.0.0.1", PROXY_PORT
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {listen!r}: give HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def env_lines(agent: str, host: str, port: int) -> str:
    """What to set so AGENT goes through the proxy at HOST:PORT."""
    url = f"http://{host}:{port}"
    if agent == "claude":
        return f"export ANTHROPIC_BASE_URL={url}\n"
    return ('model_provider = "catty"\n\n[model_providers.catty]\nname = "catty-ctx proxy"\n'
            f'base_url = "{url}/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n')


def default_root() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "catty-ctx", "proxy")


def run(listen: str | None = None, allow_remote: bool = False, anthropic_upstream: str | None = None, openai_upstream: str | None = None,
        root: str | None = None, window: int | None = None, threshold: float | None = None, summarizer: str | None = None,
        max_body_bytes: int | None = None, no_repair: bool = False, no_prune: bool = False, no_compact: bool = False,
        no_prefire: bool = False, no_record: bool = False, print_env: str | None = None) -> None:
    host, port = _address(listen)
    if print_env is not None:
        sys.stdout.write(env_lines(print_env, host, port))
        return
    if not _is_loopback(host) and not allow_remote:
        raise UsageError(f"--listen {host}: not a loopback address; add --allow-remote to listen there")
    for name, url in (("--anthropic-upstream", anthropic_upstream), ("--openai-upstream", openai_upstream)):
        if url is not None and not url.startswith(("http://", "https://")):
            raise UsageError(f"{name} {url!r}: give an http:// or https:// URL")
    try:
        from ..proxy.main import ProxySettings, serve
    except ImportError as exc:
        raise UsageError(f"the proxy needs the extra catty-ctx[proxy] ({exc})") from None
    steps = {s.strip() for s in PROXY_STEPS.split(",") if s.strip()}
    for off, step in ((no_repair, "repair"), (no_prune, "prune"), (no_compact, "compact"), (no_compact or no_prefire, "prefire")):
        if off:
            steps.discard(step)
    settings = ProxySettings(
        host=host, port=port, root=root or default_root(),
        upstreams={"anthropic": anthropic_upstream or ANTHROPIC_URL, "openai": openai_upstream or OPENAI_URL},
        window=window, threshold=DEFAULT_THRESHOLD if threshold is None else threshold, summarizer=summarizer or PROXY_SUMMARIZER,
        body_cap=PROXY_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes, steps=frozenset(steps), record=not no_record,
        lead=PROXY_PREFIRE_LEAD, prefire_wait=PROXY_PREFIRE_WAIT, prune_high=PROXY_PRUNE_HIGH_PERCENT, prune_low=PROXY_PRUNE_LOW_PERCENT,
        warn_remote=not _is_loopback(host))
    serve(settings)
