"""Redaction of credentials in stored artifacts (compaction requests keep exact inputs).

Common secret shapes are replaced by a marker naming their kind, so an artifact can be
shared for offline replay without leaking keys. `--no-redact` keeps them; see docs.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

import orjson

MARKER = "[REDACTED:{kind}]"

# (kind, pattern). Ordered: the most specific first, so a key is named by what it is.
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----", re.S)),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer_token", re.compile(r"(?i)(?<=\bBearer )[A-Za-z0-9._~+/\-]{16,}=*")),
    # `name = value` of secret-looking names: the value only is replaced (group 2).
    ("secret_assignment", re.compile(
        r"(?i)((?:api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|password|passwd|client[_-]?secret)"
        r"[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED)([^\s\"',;]{8,})"
    )),
]


# A cheap first look: every pattern above needs one of these (lower-cased) substrings, so
# text holding none of them holds no secret. Keep it in step with PATTERNS
# (tests/test_artifacts.py checks every shape).
ANCHORS = (
    b"-----begin", b"sk-", b"akia", b"asia", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_",
    b"xox", b"aiza", b"_live_", b"_test_", b"eyj", b"bearer ",
    b"api_key", b"api-key", b"apikey", b"secret_key", b"secret-key", b"secretkey",
    b"access_token", b"access-token", b"accesstoken", b"auth_token", b"auth-token", b"authtoken",
    b"passw", b"client_secret", b"client-secret", b"clientsecret",
)


def redact_many(values: list[Any]) -> tuple[list[Any], int]:
    """`redact` over a long list (the items of an artifact), touching only the values whose
    JSON holds an anchor: the anchors are searched in one lower-cased buffer, in C."""

    whole = orjson.dumps(values).lower()
    if not any(anchor in whole for anchor in ANCHORS):
        return list(values), 0  # the common case: one pass over the bytes, nothing to do
    parts = [orjson.dumps(v) for v in values]
    starts: list[int] = []
    pos = 0
    for p in parts:
        starts.append(pos)
        pos += len(p) + 1
    blob = b"\n".join(parts).lower()
    flagged: set[int] = set()
    for anchor in ANCHORS:
        i = blob.find(anchor)
        while i != -1:
            k = bisect_right(starts, i) - 1
            flagged.add(k)
            i = blob.find(anchor, starts[k] + len(parts[k]))  # the rest of this value is redacted anyway
    out = list(values)
    total = 0
    for k in sorted(flagged):
        out[k], n = redact(values[k])
        total += n
    return out, total


def redact_text(text: str) -> tuple[str, int]:
    """The text with secrets replaced, and how many were replaced."""
    total = 0
    for kind, pattern in PATTERNS:
        marker = MARKER.format(kind=kind)
        if kind == "secret_assignment":
            text, n = pattern.subn(lambda m: m.group(1) + marker, text)
        else:
            text, n = pattern.subn(marker, text)
        total += n
    return text, total


def redact(value: Any) -> tuple[Any, int]:
    """Redact every string inside a JSON-like value (keys are kept)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        out, total = [], 0
        for v in value:
            r, n = redact(v)
            out.append(r)
            total += n
        return out, total
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        total = 0
        for k, v in value.items():
            result[k], n = redact(v)
            total += n
        return result, total
    return value, 0
