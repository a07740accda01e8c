"""Two-pass compaction: prefire's NOTE1 cache, keyed by prefix length, summariser and the
SPEC prefix fingerprint; hit, stale, fallback, and the artifact on the two-pass path."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest
import xxhash

from catty_ctx.compact.pipeline import compact_session, compact_target
from catty_ctx.compact.artifacts import load_artifact
from catty_ctx.compact.ladder import WindowTooSmall
from catty_ctx.compact.measure import measure
from catty_ctx.compact.twopass import NOTE1_CAP, cache_path, lookup, note1, pass2_items, split_point
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import call, jsonl, msg, result, session_event, write_log


def _events(arg: str = "src/a.py", turns: int = 6) -> list[dict]:
    evs = [session_event(window=200_000), msg("system", "sys")]
    for t in range(turns):
        evs += [
            msg("user", f"turn {t}: please continue " + "u" * 300, f"u{t}"),
            msg("assistant", f"step {t} " + "a" * 300, f"a{t}"),
            call(f"c{t}", "read_file", {"path": arg if t == 1 else f"src/f{t}.py"}),
            result(f"c{t}", "r" * 300),
        ]
    return evs


def _events_session_items() -> list[dict]:
    evs = _events()
    return [{"v": 1, "seq": i, "ts": "2026-11-01T00:00:00.000Z", **e} for i, e in enumerate(evs)]


def _last_event(s: Path) -> dict:
    return jsonl((s / "updates.jsonl").read_bytes())[-1]


def _prefire(s: Path, summarizer: str = "extractive") -> None:
    assert compact_session(Session.open(s), prefire=True, summarizer=summarizer).status == "prefired"


def _two_pass(s: Path, summarizer: str = "extractive") -> dict:
    assert compact_session(Session.open(s), force=True, two_pass=True, summarizer=summarizer).status == "compacted"
    return _last_event(s)


def test_split_is_about_95_percent_and_keeps_calls_with_their_results() -> None:
    items = view(_events_session_items())
    k = split_point(items)
    assert items[k]["role"] != "tool" and 0 < k < len(items)
    tools_heavy = [{"role": "user", "text": "x" * 400}, {"role": "assistant", "text": "", "tool_calls": [{"call_id": "c", "name": "t", "args": {}}]},
                   {"role": "tool", "call_id": "c", "output": "y" * 4000, "is_error": False}]
    assert split_point(tools_heavy) == 1  # the assistant goes to the tail with its result


def test_note1_is_the_last_long_summary_block_else_everything_capped() -> None:
    long_a, long_b = "A" * 1500, "B" * 1200
    assert note1(f"<summary>{long_a}</summary> <summary>{long_b}</summary> <summary>short</summary>") == long_b
    assert note1("<summary>short</summary> and more") == "<summary>short</summary> and more"
    assert len(note1("z" * 50_000)) == NOTE1_CAP


def test_prefire_writes_its_cache_and_appends_no_event(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", _events())
    before = (s / "updates.jsonl").read_bytes()
    res = compact_session(Session.open(s), prefire=True)
    doc = orjson.loads(cache_path(s).read_bytes())
    assert (s / "updates.jsonl").read_bytes() == before
    items = view(s)
    assert doc["prefix_len"] == res.prefix_len == split_point(items) and doc["summarizer"] == "extractive"
    from catty_ctx.view.fingerprint import prefix_fp

    assert doc["fp"] == prefix_fp(items[: doc["prefix_len"]]) and doc["note1"] and doc["pass1_latency_ms"] >= 0


def test_hit_on_an_unchanged_prefix_with_new_items_appended(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", _events())
    _prefire(s)
    note = orjson.loads(cache_path(s).read_bytes())["note1"]
    Session.open(s).append([msg("user", "a new request after prefire", "n1"), msg("assistant", "on it", "n2")])
    ev = _two_pass(s)
    assert ev["two_pass"]["hit"] is True and ev["two_pass"]["stale"] is False
    assert ev["two_pass"]["waited_ms"] == 0 and ev["two_pass"]["pass1_latency_ms"] >= 0
    doc = load_artifact(s / ev["artifact"])  # the two-pass path writes its artifact too
    inp = doc["input"]["items"]
    assert inp[0]["role"] == "system" and note in inp[1]["text"] and inp[-1]["text"] == "on it"
    assert doc["two_pass"]["hit"] is True
    assert "a new request after prefire" in ev["summary"] and "turn 0: please continue" in ev["summary"]
    assert not cache_path(s).exists()  # consumed


def test_stale_after_rewind_and_replay_with_one_changed_argument(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", _events(arg="src/a.py"))
    _prefire(s)
    # The same turns again, one argument differs (new ids: a replay is new events, and an id the
    # log holds is not appended twice).
    replay = [{**e, **{k: f"{e[k]}-r" for k in ("id", "call_id") if k in e}} for e in _events(arg="src/b.py")[2:]]
    Session.open(s).append([{"kind": "rewind", "to_turn": 0}, *replay])
    ev = _two_pass(s)
    # the extractive pass 1 called no model: its stale note wasted no tokens
    assert ev["two_pass"] == {"hit": False, "stale": True, "pass1_latency_ms": ev["two_pass"]["pass1_latency_ms"], "waited_ms": 0,
                              "fallback": "stale", "wasted_tokens": 0}
    assert load_artifact(s / ev["artifact"])["two_pass"]["why_stale"] == "prefix fingerprint"


def test_stale_when_the_summariser_differs_and_the_fallback_still_compacts(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", _events())
    script = tmp_path / "model.py"
    script.write_text("import sys\nsys.stdin.read()\nprint('<summary>' + 'n' * 1500 + '</summary>')\n")
    _prefire(s, f"cmd:{sys.executable} {script}")
    Session.open(s).append([msg("user", "next", "n")])
    ev = _two_pass(s, "extractive")
    assert ev["two_pass"]["stale"] is True and ev["two_pass"]["hit"] is False
    doc = load_artifact(s / ev["artifact"])
    assert doc["two_pass"]["why_stale"] == "summariser" and doc["input"]["items"] == view_before_last_compaction(s)


def view_before_last_compaction(s: Path) -> list[dict]:
    lines = (s / "updates.jsonl").read_bytes().splitlines()
    return view([orjson.loads(line) for line in lines[:-1]])


def test_no_cache_is_neither_hit_nor_stale(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", _events())
    ev = _two_pass(s)
    assert ev["two_pass"]["hit"] is False and ev["two_pass"]["stale"] is False


def _text_only_fp(items: list[dict]) -> str:
    """grok-build's kind of key: item type and text only."""
    h = xxhash.xxh3_128()
    for it in items:
        h.update(f"{it.get('role')}\x00{it.get('text', it.get('output', ''))}\x01".encode())
    return h.hexdigest()


def test_a_changed_tool_argument_is_stale_where_a_text_only_fingerprint_would_hit(tmp_path: Path) -> None:
    a = write_log(tmp_path / "a", _events(arg="src/a.py"))
    b = write_log(tmp_path / "b", _events(arg="src/DIFFERENT.py"))  # the only difference
    _prefire(a)
    (b / "compaction_requests").mkdir()
    shutil.copy(cache_path(a), cache_path(b))
    k = orjson.loads(cache_path(a).read_bytes())["prefix_len"]
    va, vb = view(a), view(b)
    assert va != vb and _text_only_fp(va[:k]) == _text_only_fp(vb[:k])  # a text-only key would hit
    assert lookup(a, va, "extractive").hit is True
    miss = lookup(b, vb, "extractive")
    assert miss.hit is False and miss.stale is True and miss.why == "prefix fingerprint"


def test_pass2_takes_the_whole_live_tail_or_nothing(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", _events())
    _prefire(s)
    Session.open(s).append([msg("assistant", f"tail {i} " + "t" * 4000, f"t{i}") for i in range(40)])
    items = view(s)
    hit = lookup(s, items, "extractive")
    assert hit.hit
    tail = items[hit.prefix_len:]
    assert pass2_items(items, hit, window=40_000) is None  # ~40k tokens of tail: no room beside the note
    whole = pass2_items(items, hit, window=200_000)
    assert whole is not None and whole[2:] == tail and whole[1]["synthetic"] == "compaction_summary"


@pytest.mark.parametrize("window", [8_000, 10_000, 16_000, 40_000, 200_000])
def test_two_pass_summary_covers_the_latest_turn_at_every_window(tmp_path: Path, window: int) -> None:
    """Pass 2 at a window under the fitted reserve once summarised the system item and the note
    alone and called it a hit: the latest turn was missing from the summary."""
    evs = [session_event(window=window), msg("system", "sys")]
    for t in range(6):
        evs += [msg("user", f"turn {t}: continue " + "u" * 300, f"u{t}"), msg("assistant", f"step {t} " + "a" * 300, f"a{t}")]
    s = write_log(tmp_path / "s", evs)
    fits = window >= 40_000
    if fits:
        _prefire(s)
    else:  # no note could ever be used beside the tail: pass 1 is refused before it spends anything
        with pytest.raises(WindowTooSmall, match="--prefire refused"):
            compact_session(Session.open(s), prefire=True)
    Session.open(s).append([msg("user", "latest ask: rename LATEST_TOKEN_QX to qx_token", "u-last"),
                            msg("assistant", "renaming LATEST_TOKEN_QX now", "a-last")])
    ev = _two_pass(s)
    assert "LATEST_TOKEN_QX" in ev["summary"]
    assert ev["two_pass"]["hit"] is fits
    if fits:
        assert not cache_path(s).exists()


def test_root_prefire_takes_sessions_within_10_points_of_their_threshold(tmp_path: Path) -> None:
    evs = _events()
    tokens = sum(len(orjson.dumps(i, option=orjson.OPT_SORT_KEYS)) // 4 for i in view(_events_session_items()))
    write_log(tmp_path / "root" / "near", [{**evs[0], "window": int(tokens * 100 / 80)}, *evs[1:]])  # ~80%
    write_log(tmp_path / "root" / "far", [{**evs[0], "window": tokens * 4}, *evs[1:]])  # ~25%
    big = [evs[0], *evs[1:], *(msg("user", "pad " * 10_000, f"pad{i}") for i in range(5)), msg("assistant", "ok", "a-pad")]
    big_tokens = measure(Session.open(write_log(tmp_path / "probe", big)), keep_items=False).tokens
    write_log(tmp_path / "root" / "roomy", [{**evs[0], "window": int(big_tokens * 100 / 80)}, *big[1:]])  # ~80% of a roomy window
    rows = {Path(r.path).name: r.status for r in compact_target(str(tmp_path / "root"), prefire=True)}
    # A window whose fitted reserve leaves no room for a note beside the tail: nothing spent, a row saying so.
    assert rows == {"near": "no_room", "roomy": "prefired", "far": "below_threshold"}
    assert not any(_last_event(tmp_path / "root" / n)["kind"] == "compaction" for n in rows)


def test_prefire_dry_run_writes_nothing(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", _events())
    res = compact_session(Session.open(s), prefire=True, dry_run=True)
    assert res.status == "would_prefire" and res.prefix_len == split_point(view(s)) and not (s / "compaction_requests").exists()
