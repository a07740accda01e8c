"""Claude Code's status line: one short line from its status JSON and the session's transcript.

Claude Code runs the `statusLine` command after each update of the conversation, its status
JSON on stdin (session_id, transcript_path, model, workspace, cost, context_window, …), and
shows the first line the command prints. `status` gathers the fields (FIELDS), `render` makes
the line (`--format` names the fields), and neither may fail: whatever is unknown shows as `?`.

Incremental (docs/agents.md#status-line): the transcript is read once; each later run reads only
the bytes appended since, from the offset kept in the cache folder with a fingerprint of the
bytes before it (the file's inode, its first and its last 64 KiB before the offset). A transcript
rewritten, truncated or replaced is read again from its start. The session's calls are the
usage ledger's records (its Claude Code parser and its dedupe: one record per call), kept with
the state, so a run prices only the calls new since the last one. When the transcript is
missing or unreadable the fields come from the status JSON itself.

Text from the transcript or the JSON (a model name, an id) is data: `render` shows it through
`visible.one_line`, never obeyed by the terminal.
"""
from __future__ import annotations

import json
import math
import os
import time

from ..visible import one_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

STATE_VERSION = 3
FINGERPRINT_BYTES = 64 * 1024  # of the transcript's start, and of the bytes just before the offset
DEFAULT_WINDOW = 200_000  # Claude Code's window when the status JSON names none ("[1m]" models: LONG_WINDOW)
LONG_WINDOW = 1_000_000
# Claude Code's automatic compaction (the pinned release's rule): the window less the room kept
# for the reply (its max output, at most OUTPUT_RESERVE) less AUTOCOMPACT_BUFFER; with
# CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, that share of the window-less-reply when it is lower.
OUTPUT_RESERVE = 20_000
AUTOCOMPACT_BUFFER = 13_000
OPEN_CALLS = 64  # the last calls kept whole for the dedupe (see `_price_calls`)
TODAY_EVERY = 60.0  # seconds a day's cost is kept before the ledger is asked again
# A line is worth parsing only when it holds one of these (a usage, or a compaction's boundary).
_MARK = rb'"usage"|"compact_boundary"'

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
}
DEFAULT_FORMAT = ("{model} · ctx {tokens}/{window} {percent} ({compact_percent} of auto-compact) · {session_cost} session, "
                  "{today_cost} today · cached {cached_percent} · {compactions} compactions, {segments} archived")
UNKNOWN = "?"


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


def _obj(doc: Any, key: str) -> dict[str, Any]:
    value = doc.get(key) if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and math.isfinite(value) and value >= 0 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- Claude Code's window and compaction point ---------------------------------------------


def window_of(payload: dict[str, Any], model_id: str | None) -> int:
    given = _count(_obj(payload, "context_window").get("context_window_size"))
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


# -- the incremental read of the transcript --------------------------------------------------


def cache_folder() -> str:
    """Where the status line keeps its state: $XDG_CACHE_HOME/catty-ctx/statusline."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "catty-ctx", "statusline")


def _state_paths(folder: str, transcript: str) -> tuple[str, str]:
    # start-up: xxhash only once there is a transcript to keep a state for
    import xxhash

    key = xxhash.xxh64_hexdigest(os.path.abspath(transcript).encode("utf-8", "surrogateescape"))
    return os.path.join(folder, f"{key}.json"), os.path.join(folder, f"{key}.calls")


def _fingerprint(f: Any, offset: int) -> list[int]:
    """Hashes of the file's first bytes and of the bytes just before OFFSET (both within it)."""
    # start-up: xxhash only once there is a transcript to read
    import xxhash

    f.seek(0)
    head = f.read(min(FINGERPRINT_BYTES, offset))
    start = max(0, offset - FINGERPRINT_BYTES)
    if start:
        f.seek(start)
        tail = f.read(offset - start)
    else:
        tail = head
    return [xxhash.xxh3_64_intdigest(head), xxhash.xxh3_64_intdigest(tail)]


def _load_state(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            state = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) and state.get("v") == STATE_VERSION else {}


def _save(path: str, data: bytes) -> None:
    # start-up: the file helpers only when a state changed
    from ..files import replace_file

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        replace_file(path, data, durable=False)  # a cache: lost in a crash, it is only read again
    except OSError:
        pass


def _fresh(transcript: str, ino: int) -> dict[str, Any]:
    return {"v": STATE_VERSION, "path": transcript, "ino": ino, "offset": 0, "fp": [0, 0], "last": None, "model": None,
            "compactions": 0, "calls": 0, "cost": 0.0, "unpriced": 0, "sealed_calls": 0, "sealed_cost": 0.0, "sealed_unpriced": 0,
            "rates": {}}


def read_transcript(transcript: str, folder: str, main: str | None = None) -> dict[str, Any] | None:
    """The transcript's state (see `_fresh`), brought up to date by reading the bytes appended
    since the last run (the whole file when it is new here, rewritten or truncated); None when
    it cannot be read. MAIN, for a subagent's log: the session's main transcript (read first),
    whose responses a subagent's log may repeat."""
    state_path, calls_path = _state_paths(folder, transcript)
    main_calls = None if main is None else _state_paths(folder, main)[1]
    try:
        with open(transcript, "rb") as f:
            return _catch_up(f, _load_state(state_path), transcript, state_path, calls_path, main_calls)
    except OSError:
        return None


def subagent_logs(transcript: str) -> list[str]:
    """The logs of the session's subagents: <session>/subagents/**/*.jsonl beside the transcript."""
    found = []
    for top, _dirs, files in os.walk(os.path.join(os.path.splitext(transcript)[0], "subagents")):
        found += [os.path.join(top, name) for name in files if name.endswith(".jsonl")]
    return sorted(found)


def _catch_up(f: Any, state: dict[str, Any], transcript: str, state_path: str, calls_path: str, main_calls: str | None) -> dict[str, Any]:
    st = os.fstat(f.fileno())
    offset = state.get("offset") if state.get("path") == transcript and state.get("ino") == st.st_ino else None
    if type(offset) is not int or not 0 <= offset <= st.st_size or (offset and _fingerprint(f, offset) != state.get("fp")):
        state, offset = _fresh(transcript, st.st_ino), 0
    if offset == st.st_size:
        return state
    f.seek(offset)
    data = f.read(st.st_size - offset)
    end = data.rfind(b"\n") + 1  # whole lines only: a line still being written waits for the next run
    if end == 0:
        return state
    if _tally(state, data, end):
        _price_calls(state, f, data, end, calls_path, offset, main_calls)
    state["offset"] = offset + end
    state["fp"] = _fingerprint(f, offset + end)
    _save(state_path, json.dumps(state).encode())
    return state


def _tally(state: dict[str, Any], data: bytes, end: int) -> bool:
    """Fold the main conversation's lines of DATA[:end] into STATE: the last request's usage and
    model, the compactions. True when DATA holds usage lines (calls to count)."""
    # start-up: the line search only when there are new bytes to read
    import re

    from ..jsonl import marked_lines

    calls = False
    for _off, line in marked_lines(data, 0, end, re.compile(_MARK)):
        try:
            rec = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        if not isinstance(rec, dict):
            continue
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
            if rec.get("isSidechain") is not True:
                state["compactions"] += 1
                state["last"] = None  # the context starts again; the next request tells its size
            continue
        message = _obj(rec, "message")
        usage = message.get("usage")
        if not isinstance(usage, dict):
            continue
        calls = True
        if rec.get("type") != "assistant" or rec.get("isSidechain") is True or message.get("model") == "<synthetic>":
            continue
        counts = [_count(usage.get(k)) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                                                       "output_tokens")]
        state["last"] = counts
        if _text(message.get("model")):
            state["model"] = message["model"]
    return calls


class _Rates:
    """The price table's `rates`, remembered in the state per model, day and tier, so a run whose
    calls are of a known model and day loads no price table."""

    def __init__(self, memo: dict[str, Any]) -> None:
        self.memo = memo
        self.prices: Any = None

    def rates(self, model: str, day: int, above: bool) -> Any:
        key = f"{model}\0{day}\0{int(above)}"
        if key not in self.memo:
            if self.prices is None:
                # start-up: the price table only for a model or a day not priced here before
                from ..usage.prices import load_prices

                self.prices = load_prices()
            found = self.prices.rates(model, day, above)
            self.memo[key] = None if found is None else list(found)
        got = self.memo[key]
        return None if got is None else tuple(got)


def _price_calls(state: dict[str, Any], f: Any, data: bytes, end: int, calls_path: str, offset: int, main_calls: str | None) -> None:
    """Add the calls of DATA[:end] (the bytes of F from OFFSET) to the session's: the usage
    ledger's records, collapsed with the ones kept (one per call, whatever copies the transcript
    holds), their cost summed. Kept calls that are lost or do not match are read again from F.

    Only the last OPEN_CALLS calls are kept whole, where a copy still finds the call it repeats
    (Claude Code writes a response's copies one after the other); older ones are sealed: their
    cost is summed, and a later copy of one (its dedupe key kept as a hash) is dropped. A
    subagent's log (MAIN_CALLS: the main transcript's kept calls) drops the responses of the
    main conversation it repeats (their message ids are kept as hashes too), as the ledger does."""
    # start-up: the usage ledger's parser and dedupe only when there are calls to count
    import msgspec

    from ..usage.claude import parse
    from ..usage.copies import collapse_file
    from ..usage.prices import call_cost
    from ..usage.records import Record

    transcript = state["path"]
    kept: list[Any] = []
    aliases: list[Any] = []
    costs: list[Any] = []
    sealed: set[int] = set()
    ids: set[int] = set()
    kept_type = tuple[list[Record], list[tuple[str, str, str | None, int]], list[float | None], list[int], list[int]]
    if offset:
        try:
            with open(calls_path, "rb") as kept_file:
                kept, aliases, costs, hashes, id_hashes = msgspec.msgpack.decode(kept_file.read(), type=kept_type)
            sealed, ids = set(hashes), set(id_hashes)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            kept = []
        if len(kept) + state["sealed_calls"] != state["calls"] or len(costs) != len(kept):
            # lost, or not this transcript's: the calls before OFFSET are read again
            f.seek(0)
            prefix = f.read(offset)
            kept, sealed = [], set()
            parse(prefix, 0, len(prefix), transcript, None, kept, [])
            ids = {_hash("m" + r.msg_id) for r in kept if r.msg_id is not None}
            kept, aliases = collapse_file(kept)
            state.update(sealed_calls=0, sealed_cost=0.0, sealed_unpriced=0)
            priced = False
        else:
            priced = True
    else:
        priced = True
    new: list[Any] = []
    parse(data, 0, end, transcript, None, new, [])
    if sealed:
        new = [r for r in new if r.key is None or _hash("k" + r.key) not in sealed]
    if main_calls is not None:
        try:
            with open(main_calls, "rb") as main_file:
                repeated = set(msgspec.msgpack.decode(main_file.read(), type=kept_type)[4])
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            repeated = set()
        new = [r for r in new if not (r.sidechain and r.msg_id is not None and _hash("m" + r.msg_id) in repeated)]
    ids.update(_hash("m" + r.msg_id) for r in new if r.msg_id is not None)
    before = {id(r): c for r, c in zip(kept, costs)} if priced else {}
    out, aliases = collapse_file(kept + new, aliases)
    rates = _Rates(state.setdefault("rates", {}))
    costs = [before[id(r)] if id(r) in before else call_cost(r, rates) for r in out]  # type: ignore[arg-type]
    cut = max(0, len(out) - OPEN_CALLS)
    if cut:
        done = costs[:cut]
        state["sealed_calls"] += cut
        state["sealed_cost"] += sum(c for c in done if c is not None)
        state["sealed_unpriced"] += sum(1 for c in done if c is None)
        sealed.update(_hash("k" + r.key) for r in out[:cut] if r.key is not None)
        sealed.update(_hash("k" + key) for kind, key, _b, i in aliases if i < cut and kind == "k")
        out, costs = out[cut:], costs[cut:]
        aliases = [(kind, a, b, i - cut) for kind, a, b, i in aliases if i >= cut]
    state["calls"] = state["sealed_calls"] + len(out)
    state["cost"] = state["sealed_cost"] + sum(c for c in costs if c is not None)
    state["unpriced"] = state["sealed_unpriced"] + sum(1 for c in costs if c is None)
    _save(calls_path, msgspec.msgpack.encode((out, aliases, costs, sorted(sealed), sorted(ids))))


def _hash(name: str) -> int:
    # start-up: xxhash is loaded already (the state's name)
    import xxhash

    return xxhash.xxh3_64_intdigest(name.encode("utf-8", "surrogateescape"))


# -- the fields ------------------------------------------------------------------------------


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


def today_cost(root: str, folder: str, *, every: float = TODAY_EVERY, now: float | None = None) -> float | None:
    """Today's (local date) cost of the calls under ROOT, from the usage ledger, kept EVERY seconds."""
    # start-up: xxhash for the state's name only
    import xxhash

    now = time.time() if now is None else now
    day = time.strftime("%Y-%m-%d", time.localtime(now))
    path = os.path.join(folder, f"today-{xxhash.xxh64_hexdigest(root.encode('utf-8', 'surrogateescape'))}.json")
    kept = _load_state(path)
    if kept.get("day") == day and type(kept.get("at")) in (int, float) and 0 <= now - kept["at"] < every:
        return _number(kept.get("cost"))
    cost: float | None = None
    if os.path.isdir(root):
        # start-up: the usage ledger only once a minute (or when the day changed)
        from ..errors import CattyError
        from ..usage import usage

        try:
            ledger, _scan = usage([root], by="day", since=day, until=day, allow_empty=True)
            cost = _number(ledger.totals.get("cost_usd"))
        except (CattyError, OSError):
            cost = None
    _save(path, json.dumps({"v": STATE_VERSION, "day": day, "at": now, "cost": cost}).encode())
    return cost


def status(payload: dict[str, Any], *, folder: str | None = None, mirrors: str | None = None, env: Mapping[str, str] | None = None,
           now: float | None = None, today_every: float = TODAY_EVERY) -> dict[str, Any]:
    """The FIELDS of the status line for PAYLOAD (Claude Code's status JSON; {} gives the unknowns)."""
    folder = cache_folder() if folder is None else folder
    model = _obj(payload, "model")
    transcript = _text(payload.get("transcript_path"))
    state = read_transcript(transcript, folder) if transcript else None
    logs = [state] if state is not None else []
    if state is not None and transcript:
        logs += [s for s in (read_transcript(log, folder, transcript) for log in subagent_logs(transcript)) if s is not None]
    model_id = _text(model.get("id")) or (state or {}).get("model")
    window = window_of(payload, model_id)
    ctx = _obj(payload, "context_window")
    last = (state or {}).get("last")
    source = "transcript"
    if not last:
        current = _obj(ctx, "current_usage")
        if current:
            last = [_count(current.get(k)) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                                                           "output_tokens")]
            source = "status"
    tokens = sum(last[:3]) if last else None
    if tokens is None:
        tokens, source = _count(ctx.get("total_input_tokens")) or None, "status"
        if tokens is None:
            source = "none"
    point = compact_point(window, env)
    session_cost: float | None = None
    if any(s["calls"] for s in logs) and not any(s["unpriced"] for s in logs):
        session_cost = _number(sum(s["cost"] for s in logs))
    if session_cost is None:
        session_cost = _number(_obj(payload, "cost").get("total_cost_usd"))
    segments = None
    sid = _text(payload.get("session_id"))
    if sid:
        # start-up: the hooks' folder rules only once there is a session id
        from .hooks import HookFailure, mirror_dir, mirrors_root, session_id_of

        try:
            segments = segments_in(str(mirror_dir(mirrors_root(mirrors), "claude", session_id_of(payload))))
        except HookFailure:
            segments = None
    return {
        "model": _text(model.get("display_name")) or model_id,
        "model_id": model_id,
        "tokens": tokens,
        "window": window,
        "percent": _share(tokens, window),
        "compact_at": point,
        "compact_percent": _share(tokens, point),
        "cached_percent": _share(last[1], tokens) if last and tokens else None,
        "session_cost": session_cost,
        "today_cost": today_cost(projects_root(transcript), folder, every=today_every, now=now),
        "compactions": state["compactions"] if state is not None else None,
        "segments": segments,
        "session_id": sid,
        "source": source,
    }


def _share(part: int | None, whole: int | None) -> float | None:
    return round(part * 100 / whole, 2) if part is not None and whole else None


# -- the line --------------------------------------------------------------------------------


def _tokens_text(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    return f"{n / 1_000_000:.2f}".rstrip("0").rstrip(".") + "M"


def _percent_text(p: float) -> str:
    return f"{math.floor(p + 0.5)}%"  # half up, as Claude Code rounds its own percent


def field_text(name: str, value: Any) -> str:
    """VALUE of field NAME as the line shows it (`?` when unknown), safe for a terminal."""
    if value is None:
        return UNKNOWN
    if name in ("tokens", "window", "compact_at"):
        return _tokens_text(value)
    if name.endswith("percent"):
        return _percent_text(value)
    if name.endswith("cost"):
        return f"${value:.2f}"
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
    out = "".join(text + ("" if name is None else field_text(name, fields.get(name))) for text, name in check_format(fmt))
    return out.replace("\n", " ").replace("\r", " ")
