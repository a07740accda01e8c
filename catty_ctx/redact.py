"""Redaction of credentials in stored artifacts (compaction requests keep exact inputs).

Common secret shapes are replaced by a marker naming their kind, so an artifact can be
shared for offline replay without leaking keys. `--no-redact` keeps them; docs/reliability.md
lists what is caught and what cannot be. `redact_url` is how a URL is shown anywhere.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

import orjson

MARKER = "[REDACTED:{kind}]"

# The names whose value is a secret (`NAME = value`, `"NAME": "value"`, `NAME: value`), as a
# word of their own or the end of a longer one (`DB_PASSWORD`, `NPM_TOKEN`, `AWS_SECRET_ACCESS_KEY`):
# `max_tokens` or `tokenizer` are not such names.
_SECRET_NAMES = (
    r"_?(?:[a-z0-9]+[_\-.])*(?:api[_-]?key|apikey|auth[_-]?token|secret[_-]?access[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|"
    r"(?:encryption|signing|master|service|license)[_-]?key|client[_-]?secret|secret|token|passw(?:or)?d|pass|pwd|"
    r"credentials?|session[_-]?id|sessionid)"
)
# A quote before or after a name or value, maybe escaped (`\"apiKey\": \"…\"` inside a JSON string).
_Q = r"""(?:\\*["'])?"""
_SCHEMES = "(?:basic|bearer|token|digest|negotiate|apikey)"
# Values that are code, not a secret (`password: str`, `token = None`).
_NOT_VALUES = r"(?!(?:str|bytes|int|none|null|true|false|undefined|string|optional|required|secret|password)\b)"

# Where a key may start: a word boundary, or right after an escape (`\n`, `\t`, `\r`, `\"`) of
# the JSON a value is searched in (redact_many reads serialised values): `…\nsk-ant-…` has no
# boundary between the escape's letter and the key.
_B = r"(?:(?<=\\[nrt\"])|\b)"

# (kind, pattern), compiled once below. Ordered: the most specific first, so a key is named by
# what it is. A pattern with two groups keeps the first (the name) and replaces the second (the value).
_RULES: tuple[tuple[str, str], ...] = (
    # A key block, up to its END line, or (cut before it) to the end of its base64 lines.
    ("private_key", r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
                    r"|(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\[rnt])*)"),
    ("anthropic_key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("aws_access_key", _B + r"(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("github_token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    ("gitlab_token", _B + r"gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent)-[A-Za-z0-9_\-]{20,}"),
    ("huggingface_token", _B + r"hf_[A-Za-z0-9]{30,}"),
    ("slack_token", _B + r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("webhook_url", r"(?i)\bhttps?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/|(?:discord(?:app)?\.com|[a-z0-9.\-]*\.office\.com)/"
                    r"(?:api/)?webhooks?/)[A-Za-z0-9_/\-@.]+"),
    ("npm_token", _B + r"npm_[A-Za-z0-9]{30,}"),
    ("google_api_key", _B + r"AIza[0-9A-Za-z_\-]{35}"),
    ("stripe_key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # The password of a URL (`postgres://user:pw@host`): the user and the host are kept.
    ("url_password", r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s/:@\"'<>\\]*:)([^\s/@\"'<>\\]+)(?=@)"),
    ("bearer_token", r"(?i)(?<=\bBearer )(?!\[REDACTED)[A-Za-z0-9._~+/\-]{16,}=*"),
    # An HTTP authorization (any scheme: Basic, Bearer, token, Digest …), and cookies, to the end of the header.
    ("authorization", r"(?i)(\b(?:proxy-)?authorization" + _Q + r"\s*[:=]\s*" + _Q + r"(?:" + _SCHEMES + r"\s+)?)"
                      r"(?!\[REDACTED)(?!" + _SCHEMES + r"\s)([^\s\"'\\]{6,})"),
    ("cookie", r"(?i)(\b(?:set-)?cookie" + _Q + r"\s*:\s*" + _Q + r"|--cookie[ =]" + _Q + r")(?!\[REDACTED)([^\r\n\"'\\]{3,})"),
    # `name = value` of secret-looking names: the value only is replaced (group 2).
    ("secret_assignment", r"(?i)((?<![A-Za-z0-9_.\-])" + _SECRET_NAMES + _Q + r"\s*[:=]\s*" + _Q + r")(?!\[REDACTED)"
                          + _NOT_VALUES + r"([^\s\"',;\\]{3,})"),
)
PATTERNS: list[tuple[str, re.Pattern[str]]] = [(kind, re.compile(source)) for kind, source in _RULES]


# What each pattern needs (lower-cased): text holding none of a pattern's substrings cannot
# match it, and is not searched with it. Keep it in step with PATTERNS (tests/test_redact.py
# and tests/hostile/test_redaction.py redact every shape through it).
NEEDS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin",),
    "anthropic_key": ("sk-",),
    "openai_key": ("sk-",),
    "aws_access_key": ("akia", "asia"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("gl",),
    "huggingface_token": ("hf_",),
    "slack_token": ("xox",),
    "webhook_url": ("://",),
    "npm_token": ("npm_",),
    "google_api_key": ("aiza",),
    "stripe_key": ("_live_", "_test_"),
    "jwt": ("eyj",),
    "url_password": ("://",),
    "bearer_token": ("bearer ",),
    "authorization": ("authorization",),
    "cookie": ("cookie",),
    "secret_assignment": ("key", "secret", "token", "pass", "pwd", "credential", "session"),
}
# A cheap first look over many values at once: text holding none of these holds no secret.
ANCHORS = tuple(dict.fromkeys(a.encode() for needs in NEEDS.values() for a in needs))


def _searched(low: str) -> list[tuple[str, re.Pattern[str]]]:
    """The patterns that text lower-cased as LOW can match (its substrings hold what they need)."""
    return [(kind, pattern) for kind, pattern in PATTERNS if any(a in low for a in NEEDS[kind])]


def redact_url(url: str) -> str:
    """URL with the password of its `user:password@` replaced by a marker: how a URL is shown."""
    return PATTERNS_BY_KIND["url_password"].sub(_keep_name("url_password"), url)


def _keep_name(kind: str) -> Any:
    marker = MARKER.format(kind=kind)
    return lambda m: m.group(1) + marker


PATTERNS_BY_KIND = dict(PATTERNS)


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
    low = text.lower()
    for kind, pattern in PATTERNS:
        if not any(a in low for a in NEEDS[kind]):
            continue  # (cannot match: the search of a long text is spared)
        text, n = pattern.subn(_keep_name(kind) if pattern.groups else MARKER.format(kind=kind), text)
        if n:
            total += n
            low = text.lower()
    return text, total


def secret_pieces(values: list[Any]) -> list[str]:
    """The secrets in VALUES, and each word of 8 characters or more of them: what a derived
    text (a summary listing identifiers) may quote out of its context, longest first.

    Each value is searched on its own, with the patterns its text can match: a long tool output
    holding no secret's marks is not searched at all."""
    found: set[str] = set()
    for v in values:
        text = orjson.dumps(v).decode()
        for _kind, pattern in _searched(text.lower()):
            for m in pattern.finditer(text):
                value = m.group(2) if pattern.groups >= 2 else m.group(0)
                found.update(w for w in re.split(r"(?:\\[nrt]|[^A-Za-z0-9_+=])+", value) if len(w) >= 8)
    return sorted(found, key=len, reverse=True)


def scrub(value: Any, pieces: list[str]) -> tuple[Any, int]:
    """VALUE with every one of PIECES (from `secret_pieces`) replaced by a marker."""
    if not pieces:
        return value, 0
    pattern = re.compile("|".join(map(re.escape, pieces)))
    marker = MARKER.format(kind="secret")

    def walk(v: Any) -> tuple[Any, int]:
        if isinstance(v, str):
            return pattern.subn(marker, v)
        if isinstance(v, list):
            pairs = [walk(x) for x in v]
            return [p[0] for p in pairs], sum(p[1] for p in pairs)
        if isinstance(v, dict):
            total, out = 0, {}
            for k, x in v.items():
                out[k], n = walk(x)
                total += n
            return out, total
        return v, 0

    return walk(value)


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
