"""opencode's token records across its versions: what `tokens.input` counts (docs/usage.md#counting-each-call-once).

Until 0.15 opencode stored the model SDK's `inputTokens` as `tokens.input`: for Anthropic's
API (and Bedrock's) the input beside the cache, for every other provider (OpenAI and the
OpenAI-compatible ones, OpenRouter, Gemini, opencode's own) the whole prompt, its cache reads
`tokens.cache.read` included. Those records are told by their fields: a `step-finish` part
without the `reason` that 0.15 added, an assistant message without the `parentID` that 0.15
added. (From 0.15 to 1.0.61 the records have the later shape while `input` still held the cache
reads; 1.0.62 on subtracts them. Nothing in a record tells those apart: it is read as stored.)

A step-finish part names no provider, so an input below its cache reads is taken as Anthropic's
(the whole prompt can never be below the part of it read from the cache).

Imports nothing: the importer and the usage parser both load it.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The providers whose input count excludes the cache (the SDK's own for Anthropic's API).
CACHE_APART = frozenset({"anthropic", "amazon-bedrock", "google-vertex-anthropic"})


def fresh_input(record: dict[str, Any], given: int, cache_read: int) -> int:
    """The input beside the cache of RECORD (a step-finish part or an assistant message), whose
    `tokens.input` is GIVEN and `tokens.cache.read` CACHE_READ."""
    if cache_read <= 0 or given < cache_read:
        return given
    if record.get("type") == "step-finish":
        early = "reason" not in record
    else:
        early = "parentID" not in record and record.get("providerID") not in CACHE_APART
    return given - cache_read if early else given
