"""Claude Code's status line: one short line from its status JSON and the session's transcript.

Claude Code runs the `statusLine` command after each update of the conversation, its status
JSON on stdin (session_id, transcript_path, model, workspace, cost, context_window, …), and
shows the first line the command prints. `status` gathers the fields (FIELDS), `render` makes
the line (`--format` names the fields), and neither may fail: whatever is unknown shows as `?`.

The transcript is read incrementally (`transcript_tally`: only the bytes appended since the last
run, the session's calls counted once as the usage ledger counts them); when it is missing or
unreadable the fields come from the status JSON itself.

Text from the transcript or the JSON (a model name, an id) is data: `render` shows it through
`visible.one_line`, never obeyed by the terminal.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from datetime import datetime

import xxhash

from ..errors import CattyError
from ..visible import one_line
from .transcript_tally import STATE_VERSION, cache_folder, field_object, load_state, plain_number, read_transcript, save_cache, some_text, subagent_logs, token_count

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

DEFAULT_WINDOW = 200_000  # Claude Code's window when the status JSON names none ("[1m]" models: LONG_WINDOW)
LONG_WINDOW = 1_000_000
# Claude Code's automatic compaction (the pinned release's rule): the window less the room kept
# for the reply (its max output, at most OUTPUT_RESERVE) less AUTOCOMPACT_BUFFER; with
# CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, that share of the window-less-reply when it is lower.
OUTPUT_RESERVE = 20_000
AUTOCOMPACT_BUFFER = 13_000
TODAY_EVERY = 60.0  # seconds a day's cost is kept before the ledger is asked again

# The fields of the line, for `--format` and `--json` (docs/agents.md#status-line).
FIELDS = {
    "model": "the model's name (Claude Code's display name, else model_id)",
    "model_id": "the model's id (the status JSON's, else the transcript's last)",
    "tokens": "the last request's context: input + cache read + cache creation tokens",
    "window": "the model's context window, in tokens",
    "percent": "tokens as a percent of the window",
    "compact_at": "the token count at which Claude Code compacts automatically (none when it is off)",
    "compact_percent": "tokens as a percent of compact_at",
    "cached_percent": "the last request's cache reads as a percent of its context",
    "session_cost": "the session's cost in USD, its subagents' included, every call counted once (the usage ledger)",
    "today_cost": "today's cost in USD of every Claude Code session, counted once (the usage ledger)",
    "compactions": "compactions so far in the transcript",
    "segments": "archived segments in the session's hook mirror",
    "session_id": "the session's id",
    "source": "where the context figures come from: transcript, status (the JSON's own) or none",
    "five_hour_percent": "the 5-hour rate limit used, in percent (Claude Code's rate_limits: Pro and Max plans)",
    "five_hour_resets": "when the 5-hour limit resets (epoch seconds; shown as local HH:MM)",
    "seven_day_percent": "the 7-day rate limit used, in percent (rate_limits)",
    "seven_day_resets": "when the 7-day limit resets (epoch seconds; shown as the local day and HH:MM)",
    "block_cost": "the running 5-hour block's cost in USD over every Claude Code session (usage --by block)",
    "block_burn": "the running block's burn rate, USD per hour",
    "block_ends": "when the running block ends (epoch seconds; shown as local HH:MM)",
    "limits": "the 5-hour and 7-day limits when the JSON carries rate_limits, else the running block's cost and burn rate",
}
DEFAULT_FORMAT = ("{model} · ctx {tokens}/{window} {percent} ({compact_percent} of auto-compact) · {session_cost} session, "
                  "{today_cost} today · {limits} · cached {cached_percent} · {compactions} compactions, {segments} archived")
UNKNOWN = "?"
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class FormatError(ValueError):
    """A `--format` naming a field that is not one of FIELDS."""


# -- the status JSON -------------------------------------------------------------------------


def read_payload(data: bytes) -> tuple[dict[str, Any], str | None]:
    """The status JSON's object, and why it is empty when stdin held none ({}, a reason)."""
    if not data.strip():
        return {}, "stdin is empty"
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}, "stdin is not JSON"
    if not isinstance(doc, dict):
        return {}, "stdin is not a JSON object"
    return doc, None


# -- Claude Code's window and compaction point ---------------------------------------------


def window_of(payload: dict[str, Any], model_id: str | None) -> int:
    given = token_count(field_object(payload, "context_window").get("context_window_size"))
    if given:
        return given
    return LONG_WINDOW if model_id and "[1m]" in model_id.lower() else DEFAULT_WINDOW


def compact_point(window: int, given_env: Mapping[str, str] | None = None) -> int | None:
    """The context at which Claude Code compacts automatically; None when it is turned off."""
    env = os.environ if given_env is None else given_env
    if any(env.get(name, "").strip().lower() in ("1", "true", "yes") for name in ("DISABLE_AUTO_COMPACT", "DISABLE_COMPACT")):
        return None
    usable = window
    override = env.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "").strip()
    if override.isdigit() and int(override) > 0:
        usable = min(int(override), window)
    room = usable - OUTPUT_RESERVE
    point = room - AUTOCOMPACT_BUFFER
    try:
        share = float(env.get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", ""))
    except ValueError:
        share = 0.0
    if 0 < share <= 100:
        point = min(math.floor(room * share / 100), point)
    return point if point > 0 else None


# -- the fields ------------------------------------------------------------------------------


def mirror_folder(sid: str | None, mirrors: str | None = None) -> str | None:
    """The hook mirror of session SID: MIRRORS, else CATTY_CTX_MIRRORS, else
    $XDG_DATA_HOME/catty-ctx/mirrors, then claude/SID (the hooks' rule, made here with os.path
    alone: the hooks' module loads their installer too, a cost each status line would pay).
    None when SID cannot name a folder (the hooks' rule: letters, digits, `.`, `_`, `-`)."""
    if sid is None or _SESSION_ID.match(sid) is None or sid in (".", ".."):
        return None
    root = mirrors or os.environ.get("CATTY_CTX_MIRRORS")
    if not root:
        data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        root = os.path.join(data, "catty-ctx", "mirrors")
    return os.path.join(root, "claude", sid)


def segments_in(mirror: str) -> int | None:
    """The archived segments of a hook mirror (None: no mirror)."""
    try:
        with os.scandir(os.path.join(mirror, "segments")) as entries:
            return sum(1 for e in entries if e.name.startswith("segment_") and e.name.endswith(".md"))
    except FileNotFoundError:
        return 0 if os.path.isdir(mirror) else None
    except OSError:
        return None


def projects_root(transcript: str | None) -> str:
    """Claude Code's projects folder: the transcript's (projects/<project>/<session>.jsonl), else
    the one under CLAUDE_CONFIG_DIR or ~/.claude."""
    if transcript:
        root = os.path.dirname(os.path.dirname(os.path.abspath(transcript)))
        if os.path.basename(root) == "projects":
            return root
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    return os.path.join(given or os.path.join(os.path.expanduser("~"), ".claude"), "projects")


def _today_path(root: str, folder: str) -> str:
    return os.path.join(folder, f"today-{xxhash.xxh64_hexdigest(root.encode('utf-8', 'surrogateescape'))}.json")


def rate_limits(payload: dict[str, Any]) -> dict[str, float | None]:
    """The JSON's `rate_limits` (five_hour and seven_day: used_percentage, resets_at in epoch
    seconds) as the fields name them; all None when it carries none (API keys, older releases)."""
    limits = field_object(payload, "rate_limits")
    out: dict[str, float | None] = {}
    for name in ("five_hour", "seven_day"):
        window = field_object(limits, name)
        out[f"{name}_percent"] = plain_number(window.get("used_percentage"))
        out[f"{name}_resets"] = plain_number(window.get("resets_at"))
    return out


def kept_block(root: str, folder: str, now: float | None = None) -> dict[str, Any]:
    """The running block's cost, burn rate and end as the ledger last gave them (kept with the
    day's cost, see `today_cost`); nothing when it has ended since or none was running."""
    block = load_state(_today_path(root, folder)).get("block")
    now = time.time() if now is None else now
    if not isinstance(block, dict) or plain_number(block.get("ends")) is None or block["ends"] <= now:
        return {"block_cost": None, "block_burn": None, "block_ends": None}
    return {"block_cost": plain_number(block.get("cost")), "block_burn": plain_number(block.get("burn")), "block_ends": block["ends"]}


def today_cost(root: str, folder: str, *, every: float = TODAY_EVERY, now: float | None = None, inline: bool = True) -> float | None:
    """Today's (local date) cost of the calls under ROOT, from the usage ledger, kept EVERY seconds.

    Not INLINE (the command): when the kept figure is older, the ledger is asked in a process of
    its own, started here and not waited for (on a large home that takes seconds, and Claude Code
    cancels a status line that an update overtakes: the ledger's work would be lost with it), and
    this run shows the figure kept so far (none on a new day)."""
    now = time.time() if now is None else now
    day = time.strftime("%Y-%m-%d", time.localtime(now))
    path = _today_path(root, folder)
    kept = load_state(path)
    known = plain_number(kept.get("cost")) if kept.get("day") == day else None
    if kept.get("day") == day and type(kept.get("at")) in (int, float) and 0 <= now - kept["at"] < every:
        return known
    if not os.path.isdir(root):
        save_cache(path, json.dumps({"v": STATE_VERSION, "day": day, "at": now, "cost": None}).encode())
        return None
    if inline:
        return refresh_today(root, folder, day)
    # Marked as asked (with the figures so far), so the runs until the answer start no other.
    save_cache(path, json.dumps({"v": STATE_VERSION, "day": day, "at": now, "cost": known, "block": kept.get("block")}).encode())
    import subprocess

    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (f"import sys; sys.path.insert(0, {package_parent!r}); from catty_ctx.agents.statusline import refresh_today; "
            f"refresh_today({root!r}, {folder!r}, {day!r})")
    try:
        subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    except OSError:
        pass
    return known


def refresh_today(root: str, folder: str, day: str) -> float | None:
    """Ask the usage ledger for DAY's cost under ROOT, and for the running 5-hour block's, and
    keep them (see `today_cost`)."""
    from ..usage import blocks, pipeline

    block = None
    try:
        ledger, _scan = pipeline.usage([root], by="day", since=day, until=day, allow_empty=True)
        cost = plain_number(ledger.totals.get("cost_usd"))
        running = blocks.current(pipeline.usage([root], by="block", allow_empty=True)[0].rows)
        if running is not None:
            start = datetime.fromisoformat(running["block"].replace("Z", "+00:00")).timestamp()
            block = {"cost": running["cost_usd"], "burn": running["cost_per_hour"], "ends": start + blocks.BLOCK_SECONDS}
    except (CattyError, OSError):
        cost = None
    save_cache(_today_path(root, folder), json.dumps({"v": STATE_VERSION, "day": day, "at": time.time(), "cost": cost, "block": block}).encode())
    return cost


def status(payload: dict[str, Any], *, folder: str | None = None, mirrors: str | None = None, env: Mapping[str, str] | None = None,
           now: float | None = None, today_every: float = TODAY_EVERY, today_inline: bool = True) -> dict[str, Any]:
    """The FIELDS of the status line for PAYLOAD (Claude Code's status JSON; {} gives the unknowns).
    TODAY_INLINE false: today's cost is asked in the background (see `today_cost`)."""
    folder = cache_folder() if folder is None else folder
    model = field_object(payload, "model")
    transcript = some_text(payload.get("transcript_path"))
    state = read_transcript(transcript, folder) if transcript else None
    logs = [state] if state is not None else []
    if state is not None and transcript:
        logs += [s for s in (read_transcript(log, folder, transcript) for log in subagent_logs(transcript)) if s is not None]
    model_id = some_text(model.get("id")) or (state or {}).get("model")
    window = window_of(payload, model_id)
    ctx = field_object(payload, "context_window")
    last = (state or {}).get("last")
    source = "transcript"
    if not last:
        current = field_object(ctx, "current_usage")
        if current:
            last = [token_count(current.get(k)) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                                                           "output_tokens")]
            source = "status"
    tokens = sum(last[:3]) if last else None
    if tokens is None:
        tokens, source = token_count(ctx.get("total_input_tokens")) or None, "status"
        if tokens is None:
            source = "none"
    point = compact_point(window, env)
    session_cost: float | None = None
    if any(s["calls"] for s in logs) and not any(s["unpriced"] for s in logs):
        session_cost = plain_number(sum(s["cost"] for s in logs))
    if session_cost is None:
        session_cost = plain_number(field_object(payload, "cost").get("total_cost_usd"))
    root = projects_root(transcript)
    today = today_cost(root, folder, every=today_every, now=now, inline=today_inline)
    limits = {**rate_limits(payload), **kept_block(root, folder, now)}
    segments = None
    sid = some_text(payload.get("session_id"))
    mirror = mirror_folder(sid, mirrors)
    if mirror is not None:
        segments = segments_in(mirror)
    return {
        "model": some_text(model.get("display_name")) or model_id,
        "model_id": model_id,
        "tokens": tokens,
        "window": window,
        "percent": _share(tokens, window),
        "compact_at": point,
        "compact_percent": _share(tokens, point),
        "cached_percent": _share(last[1], tokens) if last and tokens else None,
        "session_cost": session_cost,
        "today_cost": today,
        "compactions": state["compactions"] if state is not None else None,
        "segments": segments,
        "session_id": sid,
        "source": source,
        **limits,
        "limits": limits_text(limits),
    }


def limits_text(fields: dict[str, Any]) -> str | None:
    """`5h 23% · 7d 41%` (the rate limits the JSON carries), else `block $1.84 at $0.92/h` (the
    running block's), else None."""
    if fields["five_hour_percent"] is not None or fields["seven_day_percent"] is not None:
        return " · ".join(f"{label} {fieldsome_text(name, fields[name])}" for label, name in (("5h", "five_hour_percent"), ("7d", "seven_day_percent")))
    if fields["block_cost"] is not None:
        return f"block {fieldsome_text('block_cost', fields['block_cost'])} at {fieldsome_text('block_burn', fields['block_burn'])}"
    return None


def _share(part: int | None, whole: int | None) -> float | None:
    return round(part * 100 / whole, 2) if part is not None and whole else None


# -- the line --------------------------------------------------------------------------------


def _tokenssome_text(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    return f"{n / 1_000_000:.2f}".rstrip("0").rstrip(".") + "M"


def _percentsome_text(p: float) -> str:
    return f"{math.floor(p + 0.5)}%"  # half up, as Claude Code rounds its own percent


def fieldsome_text(name: str, value: Any) -> str:
    """VALUE of field NAME as the line shows it (`?` when unknown), safe for a terminal."""
    if value is None:
        return UNKNOWN
    if name in ("tokens", "window", "compact_at"):
        return _tokenssome_text(value)
    if name.endswith("percent"):
        return _percentsome_text(value)
    if name.endswith("cost"):
        return f"${value:.2f}"
    if name == "block_burn":
        return f"${value:.2f}/h"
    if name.endswith(("_resets", "_ends")):
        return time.strftime("%a %H:%M" if name.startswith("seven") else "%H:%M", time.localtime(value))
    return one_line(str(value))


def check_format(fmt: str) -> list[tuple[str, str | None]]:
    """FMT as (literal text, field name or None) parts; `{{` and `}}` are braces; a field that is
    not one of FIELDS is a FormatError."""
    parts: list[tuple[str, str | None]] = []
    text: list[str] = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c in "{}" and fmt[i + 1:i + 2] == c:
            text.append(c)
            i += 2
            continue
        if c == "{":
            close = fmt.find("}", i)
            name = fmt[i + 1:close] if close > 0 else fmt[i + 1:]
            if close < 0 or name not in FIELDS:
                raise FormatError(f"--format: {{{one_line(name)}}} is not a field (the fields: {', '.join(FIELDS)})")
            parts.append(("".join(text), name))
            text = []
            i = close + 1
            continue
        if c == "}":
            raise FormatError("--format: a lone } (write }} for a brace)")
        text.append(c)
        i += 1
    parts.append(("".join(text), None))
    return parts


def render(fields: dict[str, Any], fmt: str = DEFAULT_FORMAT) -> str:
    """The status line: FMT with each {field} replaced by its text (`field_text`), on one line."""
    out = "".join(text + ("" if name is None else fieldsome_text(name, fields.get(name))) for text, name in check_format(fmt))
    return out.replace("\n", " ").replace("\r", " ")
