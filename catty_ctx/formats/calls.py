"""One name for a provider call across every copy of it (docs/usage.md#counting-each-call-once).

A call is met in the agent's own log, its hook mirror, an import, a fork: each copy carries the
same name, so the usage ledger counts the call once. Claude Code names the request
(`requestId`); Codex and Gemini CLI name none, so the name is made of what every copy of the
record keeps: a Codex `token_count`'s time and cumulative totals (a forked rollout copies both),
a Gemini CLI reply's id; a Claude Code response without a request id (a gateway or a local
server gave none) by its Anthropic message id within its session; opencode's by its step-finish
part's id within its message (a message without steps by its own id: the ids are the same in its storage tree, its
database and an export). An import writes the name as its `usage` event's `request_id`.

A proxy sees no `token_count` time, so a Codex call also has a second name both sides compute:
its session id and the session's running totals after it (`codex_running`); the rollout's
record carries it beside its own name and the proxy writes it as its `usage` event's
`request_id` (docs/usage.md#counting-each-call-once says when it is written).

Imports nothing: the importers and the usage parsers both load it.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

# The cumulative totals of a Codex `token_count` that name a call (and tell a new one from a repeat).
CODEX_TOTALS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def claude_call(request_id: object, message_id: object, session: object) -> str | None:
    """The name of a Claude Code call: its request id, else its Anthropic message id (`msg_…`)
    within SESSION; None when it has neither (the ledger then knows it by its record)."""
    if isinstance(request_id, str) and request_id:
        return request_id
    if isinstance(message_id, str) and message_id.startswith("msg_"):
        return f"claude:{session}:{message_id}"
    return None


CODEX_CALL = "codex:"  # + "<time>:<totals>": `codex_call`'s names


def codex_call(stamp: object, totals: Iterable[int]) -> str:
    """The name of the Codex call whose `token_count` at STAMP reached TOTALS (`CODEX_TOTALS`' counts)."""
    return f"{CODEX_CALL}{stamp}:" + ",".join(map(str, totals))


# The running totals of a Codex session that the proxy can sum from the usage it saw: the rollout's
# `total_token_usage` minus its `total_tokens` (the sum of the others, which a proxy does not record).
CODEX_RUNNING = CODEX_TOTALS[:4]
CODEX_SESSION = "codex-session:"  # + "<session id>:<running totals>": `codex_running`'s names


def codex_running(session: object, totals: Iterable[object]) -> str:
    """The name of the Codex call after which session SESSION's running totals are TOTALS
    (`CODEX_RUNNING`' counts: input with the cached part, cached input, output, reasoning)."""
    return f"{CODEX_SESSION}{session}:" + ",".join(map(str, totals))


def gemini_call(reply_id: object) -> str:
    """The name of the Gemini CLI call that wrote the reply REPLY_ID."""
    return f"gemini:{reply_id}"


OPENCODE_STEP = "opencode:step:"  # + "<message id>/<part id>" of a step-finish part: one request
OPENCODE_MESSAGE = "opencode:message:"  # + an assistant message's id: its own tokens, a call only without its steps


def opencode_step(message_id: str, part_id: str) -> str:
    """The name of the opencode call a step-finish part PART_ID of message MESSAGE_ID records."""
    return f"{OPENCODE_STEP}{message_id}/{part_id}"


def opencode_message(message_id: str) -> str:
    """The name of an opencode message's own tokens (a call only when none of its steps is known)."""
    return OPENCODE_MESSAGE + message_id
