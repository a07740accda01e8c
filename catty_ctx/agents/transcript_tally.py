"""The incremental tally of a Claude Code transcript, for the status line (docs/agents.md#status-line).

`read_transcript` brings a transcript's state up to date: the last request's usage and model
and the compactions of the main conversation (`_tally`), and the session's calls as the usage
ledger counts them (its Claude Code parser and dedupe, `_price_calls`). The state lives in the
cache folder; a run reads only the bytes appended since the last one, from the file cursor kept
with it (`session.cursor`: the transcript's device and inode, the offset, fingerprints of its
first bytes and of its last ones before the offset): a transcript rewritten, truncated or
replaced is read again from its start. Only the last OPEN_CALLS calls are kept whole; older ones
are sealed into sums.
"""
from __future__ import annotations

import json
import math
import os
import re

import xxhash

from ..session.cursor import NEW, Cursor, line_end, look
from ..session.files import replace_file
from ..session.jsonl import marked_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

STATE_VERSION = 4  # 4: the file cursor of `session.cursor`
OPEN_CALLS = 64  # the last calls kept whole for the dedupe (see `_price_calls`)
# A line is worth parsing only when it holds one of these (a usage, or a compaction's boundary).
_MARK = re.compile(rb'"usage"|"compact_boundary"')


# -- reading the status JSON's and the transcript's values


def field_object(doc: Any, key: str) -> dict[str, Any]:
    value = doc.get(key) if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else {}


def token_count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def plain_number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and math.isfinite(value) and value >= 0 else None


def some_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- the incremental read


def cache_folder() -> str:
    """Where the status line keeps its state: $XDG_CACHE_HOME/catty-ctx/statusline."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "catty-ctx", "statusline")


def _state_paths(folder: str, transcript: str) -> tuple[str, str]:
    """The transcript's state file, and the start of its calls files' names (KEY.OFFSET.calls)."""
    key = xxhash.xxh64_hexdigest(os.path.abspath(transcript).encode("utf-8", "surrogateescape"))
    return os.path.join(folder, f"{key}.json"), os.path.join(folder, key)


def _calls_file(state: dict[str, Any], folder: str) -> str | None:
    name = state.get("calls_file")
    return os.path.join(folder, name) if isinstance(name, str) and os.sep not in name else None


def load_state(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            state = json.loads(f.read())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) and state.get("v") == STATE_VERSION else {}


def save_cache(path: str, data: bytes) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        replace_file(path, data, durable=False)  # a cache: lost in a crash, it is only read again
    except OSError:
        pass


def _fresh(transcript: str) -> dict[str, Any]:
    return {"v": STATE_VERSION, "path": transcript, "last": None, "model": None,
            "compactions": 0, "calls": 0, "cost": 0.0, "unpriced": 0, "sealed_calls": 0, "sealed_cost": 0.0, "sealed_unpriced": 0,
            "rates": {}}


def read_transcript(transcript: str, folder: str, main: str | None = None) -> dict[str, Any] | None:
    """The transcript's state (see `_fresh`), brought up to date by reading the bytes appended
    since the last run (the whole file when it is new here, rewritten or truncated); None when
    it cannot be read. MAIN, for a subagent's log: the session's main transcript (read first),
    whose responses a subagent's log may repeat."""
    state_path, prefix = _state_paths(folder, transcript)
    main_calls = None if main is None else _calls_file(load_state(_state_paths(folder, main)[0]), folder)
    try:
        with open(transcript, "rb") as f:
            return _catch_up(f, load_state(state_path), transcript, state_path, prefix, main_calls)
    except OSError:
        return None


def subagent_logs(transcript: str) -> list[str]:
    """The logs of the session's subagents: <session>/subagents/**/*.jsonl beside the transcript."""
    found = []
    for top, _dirs, files in os.walk(os.path.join(os.path.splitext(transcript)[0], "subagents")):
        found += [os.path.join(top, name) for name in files if name.endswith(".jsonl")]
    return sorted(found)


def _catch_up(f: Any, state: dict[str, Any], transcript: str, state_path: str, prefix: str, main_calls: str | None) -> dict[str, Any]:
    """STATE brought up to date with F's bytes past its offset. The calls go to a new calls file
    named by the offset they are counted to, and the state that names it is written after it: a
    run cancelled between the two leaves the state and its calls file as they were."""
    st = os.fstat(f.fileno())
    reading = look(Cursor.from_json(state) if state.get("path") == transcript else None, st,
                   lambda at, n: os.pread(f.fileno(), n, at))
    if reading.verdict == NEW:
        state = _fresh(transcript)
    offset = reading.start
    if offset == st.st_size:
        return state
    f.seek(offset)
    data = f.read(st.st_size - offset)
    end = line_end(data, 0, len(data))  # whole lines only: a line still being written waits for the next run
    if end == 0:
        return state
    counted = _tally(state, data, end)
    if counted:
        calls_out = f"{prefix}.{offset + end}.calls"
        _price_calls(state, f, data, end, _calls_file(state, os.path.dirname(prefix)) if offset else None, calls_out, offset, main_calls)
        state["calls_file"] = os.path.basename(calls_out)
    state.update(reading.advance(offset + end, lambda at, n: data[at - offset : at - offset + n]).as_json())
    save_cache(state_path, json.dumps(state).encode())
    if counted:
        _drop_other_calls(prefix, state["calls_file"])
    return state


def _drop_other_calls(prefix: str, current: str) -> None:
    """Remove the transcript's calls files but CURRENT (earlier offsets', or a cancelled run's)."""
    folder, key = os.path.split(prefix)
    try:
        with os.scandir(folder) as entries:
            stale = [e.path for e in entries if e.name.startswith(key + ".") and e.name.endswith(".calls") and e.name != current]
        for path in stale:
            os.unlink(path)
    except OSError:
        pass


def _tally(state: dict[str, Any], data: bytes, end: int) -> bool:
    """Fold the main conversation's lines of DATA[:end] into STATE: the last request's usage and
    model, the compactions. True when DATA holds usage lines (calls to count)."""
    calls = False
    for _off, line in marked_lines(data, 0, end, _MARK):
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
        message = field_object(rec, "message")
        usage = message.get("usage")
        if not isinstance(usage, dict):
            continue
        calls = True
        if rec.get("type") != "assistant" or rec.get("isSidechain") is True or message.get("model") == "<synthetic>":
            continue
        counts = [token_count(usage.get(k)) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                                                       "output_tokens")]
        state["last"] = counts
        if some_text(message.get("model")):
            state["model"] = message["model"]
    return calls


class _Rates:
    """The price table's `rates`, remembered in the state per model, day and tier, so a run whose
    calls are of a known model and day loads no price table."""
    def __init__(self, memo: dict[str, Any], load_prices: Callable[[], Any]) -> None:
        self.memo = memo
        self.load_prices = load_prices
        self.prices: Any = None

    def rates(self, model: str, day: int, above: bool) -> Any:
        key = f"{model}\0{day}\0{int(above)}"
        if key not in self.memo:
            if self.prices is None:
                self.prices = self.load_prices()
            found = self.prices.rates(model, day, above)
            self.memo[key] = None if found is None else list(found)
        got = self.memo[key]
        return None if got is None else tuple(got)


def _price_calls(state: dict[str, Any], f: Any, data: bytes, end: int, calls_in: str | None, calls_out: str, offset: int,
                 main_calls: str | None) -> None:
    """Add the calls of DATA[:end] (the bytes of F from OFFSET) to the session's: the usage
    ledger's records, collapsed with the ones kept (one per call, whatever copies the transcript
    holds), their cost summed, kept in CALLS_OUT. The calls kept in CALLS_IN that are lost or do not
    match are read again from F.

    Only the last OPEN_CALLS calls are kept whole, where a copy still finds the call it repeats
    (Claude Code writes a response's copies one after the other); older ones are sealed: their
    cost is summed, and a later copy of one (its dedupe key kept as a hash) is dropped. A
    subagent's log (MAIN_CALLS: the main transcript's kept calls) drops the responses of the
    main conversation it repeats (their message ids are kept as hashes too), as the ledger does."""
    import msgspec

    from ..usage import claude, copies, prices, records

    transcript = state["path"]
    kept: list[Any] = []
    aliases: list[Any] = []
    costs: list[Any] = []
    sealed: set[int] = set()
    ids: set[int] = set()
    kept_type = tuple[list[records.Record], list[tuple[str, str, str | None, int]], list[float | None], list[int], list[int]]
    if offset:
        try:
            if calls_in is None:
                raise FileNotFoundError(calls_out)
            with open(calls_in, "rb") as kept_file:
                kept, aliases, costs, hashes, id_hashes = msgspec.msgpack.decode(kept_file.read(), type=kept_type)
            sealed, ids = set(hashes), set(id_hashes)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            kept = []
        if len(kept) + state["sealed_calls"] != state["calls"] or len(costs) != len(kept):
            # lost, or not this transcript's: the calls before OFFSET are read again
            f.seek(0)
            prefix = f.read(offset)
            kept, sealed = [], set()
            claude.parse(prefix, 0, len(prefix), transcript, None, kept, [])
            ids = {key_hash("m" + r.msg_id) for r in kept if r.msg_id is not None}
            kept, aliases = copies.collapse_file(kept)
            state.update(sealed_calls=0, sealed_cost=0.0, sealed_unpriced=0)
            priced = False
        else:
            priced = True
    else:
        priced = True
    new: list[Any] = []
    claude.parse(data, 0, end, transcript, None, new, [])
    if sealed:
        new = [r for r in new if r.key is None or key_hash("k" + r.key) not in sealed]
    if main_calls is not None:
        try:
            with open(main_calls, "rb") as main_file:
                repeated = set(msgspec.msgpack.decode(main_file.read(), type=kept_type)[4])
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            repeated = set()
        new = [r for r in new if not (r.sidechain and r.msg_id is not None and key_hash("m" + r.msg_id) in repeated)]
    ids.update(key_hash("m" + r.msg_id) for r in new if r.msg_id is not None)
    before = {id(r): c for r, c in zip(kept, costs)} if priced else {}
    out, aliases = copies.collapse_file(kept + new, aliases)
    rates = _Rates(state.setdefault("rates", {}), prices.load_prices)
    costs = [before[id(r)] if id(r) in before else prices.call_cost(r, rates) for r in out]  # type: ignore[arg-type]
    cut = max(0, len(out) - OPEN_CALLS)
    if cut:
        done = costs[:cut]
        state["sealed_calls"] += cut
        state["sealed_cost"] += sum(c for c in done if c is not None)
        state["sealed_unpriced"] += sum(1 for c in done if c is None)
        sealed.update(key_hash("k" + r.key) for r in out[:cut] if r.key is not None)
        sealed.update(key_hash("k" + key) for kind, key, _b, i in aliases if i < cut and kind == "k")
        out, costs = out[cut:], costs[cut:]
        aliases = [(kind, a, b, i - cut) for kind, a, b, i in aliases if i >= cut]
    state["calls"] = state["sealed_calls"] + len(out)
    state["cost"] = state["sealed_cost"] + sum(c for c in costs if c is not None)
    state["unpriced"] = state["sealed_unpriced"] + sum(1 for c in costs if c is None)
    save_cache(calls_out, msgspec.msgpack.encode((out, aliases, costs, sorted(sealed), sorted(ids))))


def key_hash(name: str) -> int:
    return xxhash.xxh3_64_intdigest(name.encode("utf-8", "surrogateescape"))
