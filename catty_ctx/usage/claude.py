"""Usage records of a Claude Code log: assistant records carrying `message.usage`.

Claude Code writes one line per content block of a response, each repeating the usage; the
copies share the message and request ids, which make the record's dedupe key.
"""
from __future__ import annotations

import os
from datetime import datetime
from typing import Annotated

import msgspec

from ..formats.calls import claude_call
from ..session.jsonl import marked_lines
from .lines import MISMATCH, count, json_object, typed_view, whole
from .records import MAIN_AGENT, UNKNOWN_MODEL, Record
from .times import epoch, moment

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MARK = b'"output_tokens"'  # every usage object has it; a longer needle also searches faster

# The fields the ledger reads, typed as Claude Code writes them; a line of any other shape (a
# field of another type, a count past int64, left to the general decoder, no usage) is
# read again by the general decoder under the same rules.
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
Count = Int64 | None


_Usage = typed_view("_Usage", input_tokens=Count, output_tokens=Count, cache_creation_input_tokens=Count, cache_read_input_tokens=Count,
                    cache_creation=typed_view("_Written", ephemeral_1h_input_tokens=Count) | None)
_Message = typed_view("_Message", id=str | None, model=str | None, usage=_Usage | None)
# (a time stamp in RFC 3339 is parsed in C; another form is read by the general decoder)
_Line = typed_view("_Line", message=_Message | None, timestamp=datetime | None, sessionId=str | None, requestId=str | None,
                   uuid=str | None, isSidechain=bool | None, agentId=str | None, costUSD=Int64 | float | None)
# Any line of a log, read whole: a progress record's subagent response is told apart.
_AnyLine = typed_view("_AnyLine", _Line, data=typed_view("_Progress", message=typed_view("_Inner", message=_Message | None) | None) | None)
_decode_line = msgspec.json.Decoder(_Line).decode
_decode_lines = msgspec.json.Decoder(_AnyLine).decode_lines


def _general_only(line: bytes) -> Any:
    raise msgspec.ValidationError("typed decoding off")


def context(path: str) -> tuple[str, str, str]:
    """(project, session, agent) a Claude Code file implies by where it lies."""
    parts = os.path.normpath(path).split(os.sep)
    stem = os.path.splitext(parts[-1])[0]
    project = ""
    if "projects" in parts:
        i = len(parts) - 1 - parts[::-1].index("projects")
        if i + 2 < len(parts):
            project = parts[i + 1]
    session = parts[-3] if len(parts) >= 3 and parts[-2] == "subagents" else stem
    return project, session, stem


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]], typed: bool = True) -> Any:
    """Append the records of [start, end) to RECS and the bad lines to BAD (no state to resume from).

    TYPED False reads every line with the general decoder (what a typed read must equal)."""
    project, default_session, stem = context(path)
    if typed:
        whole = _whole(mm, start, end, default_session, project, stem)
        if whole is not None:
            recs.extend(whole)
            return state

    decode = _decode_line if typed else _general_only
    mismatch = MISMATCH
    append = recs.append
    intern: Any = {}.setdefault  # one string object per model, session and agent: smaller to ship and cache
    for off, line in marked_lines(mm, start, end, MARK):
        try:
            o = decode(line)
            m: Any = o.message  # (None raises AttributeError below: the general reader's case)
            u = m.usage
            inp, out, cw = u.input_tokens, u.output_tokens, u.cache_creation_input_tokens
            if inp is None or out is None or cw is None:
                raise AttributeError  # the general reader's rules for what is missing
        except (*mismatch, AttributeError):
            d = json_object(line, off, bad)
            if d is None:
                continue
            rec = record(d, default_session, project, stem, intern)
            if isinstance(rec, str):
                bad.append((off, rec))
            elif rec is not None:
                append(rec)
            continue
        model = m.model
        if model == "<synthetic>":  # made up locally: no API call
            continue
        t = o.timestamp
        if t is None:
            bad.append((off, "usage without token counts or timestamp"))
            continue
        ts = t.timestamp() if t.tzinfo is not None else moment(t)
        cc = u.cache_creation
        rec = make(ts, model, inp, out, u.cache_read_input_tokens, cw, o.sessionId or default_session, m.id or None,
                   o.requestId or None, o.uuid or None, o.isSidechain is True, o.costUSD, o.agentId, project, stem, intern,
                   cc.ephemeral_1h_input_tokens if cc is not None else None)
        if rec is not None:
            append(rec)
    return state


def _whole(mm: Any, start: int, end: int, default_session: str, project: str, stem: str) -> list[Record] | None:
    """The records of [start, end) when every line there reads typed as Claude Code writes it
    and none is odd (no bad line, no progress record holding a response, no count missing);
    else None, and the marked lines are read one by one.

    Decoding every line whole in one C call costs less than finding the marked lines and
    decoding those (the decoder skips a line's content as fast as the search reads it).
    """
    with memoryview(mm) as view, view[start:end] as part:
        try:
            lines = _decode_lines(part)
        except MISMATCH:
            return None
    out: list[Record] = []
    append = out.append
    intern: Any = {}.setdefault  # (see parse)
    main = MAIN_AGENT
    # `make` inlined for the lines that decoded typed (the types are known): this loop runs once per usage line.
    for o in lines:
        m = o.message
        u = m.usage if m is not None else None
        if m is None or u is None:
            d = o.data
            if d is not None and d.message is not None and d.message.message is not None and d.message.message.usage is not None:
                return None
            continue
        inp, out_, cw = u.input_tokens, u.output_tokens, u.cache_creation_input_tokens
        if inp is None or out_ is None or cw is None:
            return None
        model = m.model
        if model == "<synthetic>":
            continue
        t = o.timestamp
        if t is None:
            return None
        ts = t.timestamp() if t.tzinfo is not None else moment(t)
        mid, rid, uid = m.id or None, o.requestId or None, o.uuid or None
        cr, cost, cc = u.cache_read_input_tokens, o.costUSD, u.cache_creation
        if rid is None and not (inp > 0 or out_ > 0 or (cr is not None and cr > 0) or cw > 0):
            continue  # (see `make`: no request made it)
        session = o.sessionId or default_session
        key = "r\0" + rid if rid is not None else _key(mid, rid, uid, session, ts)  # (`_key` of a request id, inlined)
        model = intern(model, model) if model else UNKNOWN_MODEL
        cw = cw if cw >= 0 else 0
        hour = cc.ephemeral_1h_input_tokens if cc is not None else None
        hour = min(hour, cw) if hour is not None and hour > 0 else 0
        if o.isSidechain is True:
            agent = o.agentId or stem
            append(Record(ts, model, inp if inp >= 0 else 0, out_ if out_ >= 0 else 0, cr if cr is not None and cr >= 0 else 0,
                          cw, 0, cost, key, True, intern(agent, agent), intern(session, session), project, False, mid, uid, hour))
        else:
            append(Record(ts, model, inp if inp >= 0 else 0, out_ if out_ >= 0 else 0, cr if cr is not None and cr >= 0 else 0,
                          cw, 0, cost, key, False, main, intern(session, session), project, False, mid, uid, hour))
    return out


def record(o: dict[str, Any], default_session: str, project: str, stem: str, intern: Any) -> Record | str | None:
    """The record of one decoded line, None when it holds none, or why it is bad."""
    m = o.get("message")
    if type(m) is not dict or "usage" not in m:
        # Older versions logged a subagent's responses inside the parent as progress records.
        d: Any = o.get("data")
        inner = d.get("message") if type(d) is dict else None
        if type(inner) is not dict or type(inner.get("message")) is not dict:
            return None
        # (a streaming-time snapshot of a subagent's call: a sidechain copy, which the subagent's
        # own final record, larger, wins over; and the subagent's, not the main loop's)
        o = dict(inner, sessionId=o.get("sessionId"), agentId=inner.get("agentId") or d.get("agentId"), isSidechain=True)
        m = inner["message"]
    u = m.get("usage", None)
    if type(u) is not dict:
        return None
    get = o.get
    model = m.get("model")
    if model == "<synthetic>":  # made up locally: no API call
        return None
    inp = u.get("input_tokens")
    out = u.get("output_tokens")
    ts = epoch(get("timestamp"))
    if not whole(inp) or not whole(out) or ts is None:
        return "usage without token counts or timestamp"
    cw = u.get("cache_creation_input_tokens")
    cc = u.get("cache_creation")
    if not whole(cw):
        cw = sum(count(v) for v in cc.values()) if type(cc) is dict else 0
    cr = u.get("cache_read_input_tokens")
    return make(ts, model, inp, out, cr, cw, get("sessionId") or default_session, m.get("id") or None, get("requestId") or None,
                get("uuid") or None, get("isSidechain") is True, get("costUSD"), get("agentId"), project, stem, intern,
                cc.get("ephemeral_1h_input_tokens") if type(cc) is dict else None)


def _key(mid: Any, rid: Any, uid: Any, session: Any, ts: float) -> str | None:
    """The dedupe key of a record: the call's name (`formats.calls`, an import's `request_id` too), else its ids."""
    name = claude_call(rid, mid, session)
    if name is not None:
        return f"r\0{name}"
    if mid:  # (not an Anthropic id: the same only at the same time)
        return f"c\0{mid}\0\0{session}\0{ts}"
    return f"u\0{session}\0{uid}" if uid else None  # (a uuid alone never joins two sessions: see copies._replay)


def make(ts: float, model: Any, inp: int, out: int, cr: Any, cw: int, session: Any, mid: Any, rid: Any, uid: Any, side: bool,
         cost: Any, agent_id: Any, project: str, stem: str, intern: Any, hour: Any = None) -> Record | None:
    """The record of one usage line's fields (IDs already None when empty); None when it stands for no request.

    A call is named by its request id (`formats.calls`: a hook mirror or an import of the file
    keeps it); a record with none and no token counted was made by a tool, not a request (a
    write-back's assistant record, docs/writeback.md). HOUR: the cache writes kept for an hour.
    """
    if rid is None and not (inp > 0 or out > 0 or count(cr) or cw > 0):
        return None
    key = _key(mid, rid, uid, session, ts)
    if type(model) is not str or not model:
        model = UNKNOWN_MODEL
    if type(session) is not str:
        session = str(session)
    agent = str(agent_id or stem) if side else MAIN_AGENT
    return Record(ts, intern(model, model), inp if inp >= 0 else 0, out if out >= 0 else 0, count(cr),
                  cw if cw >= 0 else 0, 0, cost if type(cost) in (int, float) else None, key, side, intern(agent, agent),
                  intern(session, session), project, False, mid if type(mid) is str or mid is None else str(mid),
                  uid if type(uid) is str or uid is None else str(uid), min(count(hour), cw) if cw > 0 else 0)
