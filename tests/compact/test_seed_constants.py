"""The seed's constants, pinned. The table lists each constant grok-build names, as a literal
beside the value the code uses; then one behaviour test per constant drives the mechanism
at its boundary with literal inputs, so a drifted constant fails a test even when the table
is edited along with it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catty_ctx.view import announce, tokens
from catty_ctx.session import blobs
from catty_ctx.defaults import DEFAULT_THRESHOLD
from catty_ctx.compact.pipeline import PREFIRE_LEAD, compact_session, compact_target
from catty_ctx.compact.measure import measure
from catty_ctx.compact import ladder, twopass
from catty_ctx.session import segments
from catty_ctx.compact.ladder import SummaryRequest, Transient, _stage_items, run_ladder
from catty_ctx.view.fingerprint import canonical
from catty_ctx.prune.options import PruneOptions, PruneStats
from catty_ctx.prune.pipeline import prune
from catty_ctx.session.store import Session
from support import call, msg, result, session_event, write_log

MIB = 1 << 20
_PRUNE = PruneOptions()

# (what, the seed's literal, the code's value)
SEED_CONSTANTS = [
    ("auto-compact threshold, % of the window", 85, DEFAULT_THRESHOLD),
    ("two-pass prefire lead, points below the threshold", 10, PREFIRE_LEAD),
    ("two-pass split, share of the view in pass 1", 0.95, twopass.SPLIT),
    ("NOTE1 cap, characters", 12_000, twopass.NOTE1_CAP),
    ("NOTE1 block minimum, characters", 1_000, twopass.NOTE1_MIN_BLOCK),
    ("fitted stage margin, tokens", 32_768, ladder.FITTED_RESERVE),
    ("lossy stage budget, share of the window", 0.70, ladder.LOSSY_FRACTION),
    ("attempts per stage", 3, ladder.ATTEMPTS_PER_STAGE),
    ("backoff between attempts, seconds", 3.0, ladder.BACKOFF_S),
    ("degenerate summary, characters", 500, ladder.MIN_SUMMARY_CHARS),
    ("segment cap, bytes (512 KiB)", 512 * 1024, segments.SEGMENT_CAP),
    ("INDEX.md keywords per segment", 8, segments.MAX_KEYWORDS),
    ("image eviction high mark, bytes (47 MiB)", 47 * MIB, _PRUNE.image_high),
    ("image eviction low mark, bytes (25 MiB)", 25 * MIB, _PRUNE.image_low),
    ("pruning runs above, % of the window", 50.0, _PRUNE.min_percent),
    ("tool results untouched below this age, turns", 3, _PRUNE.keep_turns),
    ("tool results omitted from this age, turns", 10, _PRUNE.omit_age),
    ("tool results trimmed above, characters", 4_000, _PRUNE.trim_over),
    ("trimmed result keeps its first, characters", 1_500, _PRUNE.trim_head),
    ("trimmed result keeps its last, characters", 1_500, _PRUNE.trim_tail),
    ("skill description in a listing, bytes", 400, announce.DESCRIPTION_LIMIT),
    ("user message kept inline, bytes (25 KB)", 25_000, blobs.USER_LIMIT),
    ("tool output kept inline, bytes (40 KB)", 40_000, blobs.TOOL_LIMIT),
    ("tokens per image", 765, tokens.IMAGE_TOKENS),
    ("bytes per token", 4, tokens.BYTES_PER_TOKEN),
]


@pytest.mark.parametrize("what,seed,code", SEED_CONSTANTS, ids=[c[0] for c in SEED_CONSTANTS])
def test_the_code_uses_the_seed_constant(what: str, seed: float, code: float) -> None:
    assert code == seed, f"{what}: the seed says {seed}, the code has {code}"


# -- behaviour at each boundary ------------------------------------------------------------------


def _talk(path: Path, window: int, turns: int = 6, size: int = 400) -> Path:
    events = [session_event(window=window), msg("system", "sys")]
    for i in range(turns):
        events += [msg("user", f"turn {i} " + "u" * size, f"u{i}"), msg("assistant", f"step {i} " + "a" * size, f"a{i}")]
    return write_log(path, events)


def _window_for(path: Path, percent: float, above: bool) -> int:
    """The window that puts the session just at (above=True) or just under `percent` %."""
    t = measure(Session.open(_talk(path, 200_000)), keep_items=False).tokens
    return int(t * 100 // percent) if above else int(t * 100 // percent) + 1


def test_85_percent_triggers_and_just_under_does_not(tmp_path: Path) -> None:
    at = _talk(tmp_path / "at", _window_for(tmp_path / "probe", 85, True))
    under = _talk(tmp_path / "under", _window_for(tmp_path / "probe2", 85, False))
    assert compact_session(Session.open(at), check=True).status == "over_threshold"
    assert compact_session(Session.open(under), check=True).status == "below_threshold"


def test_a_root_prefires_from_75_percent(tmp_path: Path) -> None:
    # (sessions large enough that the window less the fitted reserve holds a note and the tail)
    t = measure(Session.open(_talk(tmp_path / "probe", 200_000, size=40_000)), keep_items=False).tokens
    _talk(tmp_path / "root" / "at75", int(t * 100 / 75.0), size=40_000)
    _talk(tmp_path / "root" / "at74", int(t * 100 / 74.6), size=40_000)
    statuses = {Path(r.path).name: r.status for r in compact_target(str(tmp_path / "root"), prefire=True)}
    assert statuses == {"at75": "prefired", "at74": "below_threshold"}


def test_pass_one_takes_95_of_100_equal_items() -> None:
    items = [{"role": "user", "text": f"{i:03d}" + "x" * 96} for i in range(100)]
    assert twopass.split_point(items) == 95
    assert twopass.split_point(items, 0.99) == 95  # clamped


def test_note1_is_cut_at_12000_characters_and_needs_a_block_over_1000() -> None:
    assert len(twopass.note1("z" * 30_000)) == 12_000
    assert twopass.note1("<summary>" + "A" * 1001 + "</summary>") == "A" * 1001
    assert twopass.note1("<summary>" + "A" * 1000 + "</summary>").startswith("<summary>")


def _hundred_token_items(n: int) -> list[dict[str, Any]]:
    item = {"role": "user", "text": "x" * 375}
    assert len(canonical(item)) // 4 == 100
    return [dict(item) for _ in range(n)]


def test_the_fitted_stage_leaves_32768_tokens() -> None:
    req = SummaryRequest(items=_hundred_token_items(500), window=42_768)
    assert len(_stage_items("fitted", req)) == 100  # 10,000 tokens of room
    assert _stage_items("fitted", SummaryRequest(items=_hundred_token_items(500), window=32_768)) == []


def test_the_lossy_stage_takes_70_percent_of_the_window() -> None:
    req = SummaryRequest(items=_hundred_token_items(500), window=10_000)
    assert len(_stage_items("lossy", req)) == 70


def test_three_attempts_3_then_6_seconds_apart_and_500_characters_are_enough() -> None:
    slept: list[float] = []

    def busy(p: object, t: object) -> str:
        raise Transient("HTTP 503")

    res = run_ladder("t", SummaryRequest(items=[{"role": "user", "text": "hi"}]), busy, sleep=slept.append)
    assert res.summary is None and len(res.attempts) == 3 and slept == [3.0, 6.0]  # a service failure waits 3 s, then 6 s
    slept.clear()
    short = run_ladder("t", SummaryRequest(items=[{"role": "user", "text": "hi"}]), lambda p, t: "<summary>" + "s" * 499 + "</summary>", sleep=slept.append)
    assert short.summary is None and len(short.attempts) == 3 and slept == []  # a short answer is asked again at once
    ok = run_ladder("t", SummaryRequest(items=[{"role": "user", "text": "hi"}]), lambda p, t: "<summary>" + "s" * 500 + "</summary>", sleep=slept.append)
    assert ok.summary == "s" * 500


def test_a_segment_is_capped_at_512_kib(tmp_path: Path) -> None:
    """600 messages of 1,000 characters: cut at a whole message within 2 KiB under the cap."""
    evs = [{"v": 1, "seq": i, "ts": "2026-11-01T00:00:00.000Z", "kind": "message", "id": f"m{i}", "role": "user", "text": "w" * 1_000} for i in range(1, 601)]
    text, _ = segments.render_segment(1, evs, "## 8. Current Work\nsplit parser")
    assert 510 * 1024 < len(text.encode()) <= 512 * 1024
    small, _ = segments.render_segment(1, evs[:480], "## 8. Current Work\nsplit parser")  # ~500 KB: whole
    assert all(f"[seq {e['seq']}]" in small for e in evs[:480])


def test_an_index_row_has_at_most_8_keywords() -> None:
    words = " ".join(f"module_{c}" for c in "abcdefghijkl")
    _, info = segments.render_segment(1, [], f"## 8. Current Work\n{words}\n")
    assert info.keywords == [f"module_{c}" for c in "abcdefgh"]


def _blob_image_session(path: Path, images: int, size: int) -> Path:
    """A session whose user messages each carry one image kept as a blob of `size` bytes
    (sparse files: only their sizes matter to pruning)."""
    (path / "blobs").mkdir(parents=True)
    events: list[dict[str, Any]] = [session_event(window=10_000_000)]
    for i in range(images):
        handle = f"{i:032x}"
        with open(path / "blobs" / handle, "wb") as f:
            f.truncate(size)
        events.append(msg("user", f"screen {i}", f"u{i}", images=[{"blob": handle, "media_type": "image/png"}]))
    return write_log(path, events)


def test_images_go_at_47_mib_down_to_25_mib(tmp_path: Path) -> None:
    """60 images of 1 MiB: 1,398,104 base64 bytes each in a request. The body reaches 47 MiB
    at the 36th; the oldest go until 18 are left (25 MiB); it reaches 47 MiB again at the 54th
    and the oldest 18 go again. The 24 newest remain."""
    s = _blob_image_session(tmp_path / "s", 60, MIB)
    st = PruneStats()
    items = [vi.item for vi in prune(Session.open(s), PruneOptions(), stats=st)]
    assert st.images_removed == 36 and sum(len(it.get("images", ())) for it in items) == 24
    kept = [i for i, it in enumerate(items) if it.get("images")]
    assert kept == list(range(36, 60))


def _tiered(outputs: list[str], window: int) -> tuple[dict[str, str], PruneStats]:
    evs: list[dict[str, Any]] = [session_event(window=window)]
    for n, out in enumerate(outputs):
        evs += [msg("user", f"turn {n}", f"u{n}"), msg("assistant", "", f"a{n}"), call(f"c{n}", "read_file", {"n": n}), result(f"c{n}", out)]
    full = [{"v": 1, "seq": i, "ts": "2026-11-01T00:00:00.000Z", **e} for i, e in enumerate(evs)]
    st = PruneStats()
    items = [vi.item for vi in prune(full, PruneOptions(strategy="tiered"), window=window, stats=st)]
    return {it["call_id"]: it["output"] for it in items if it["role"] == "tool"}, st


def test_results_under_3_turns_old_stay_from_10_they_go_between_they_are_trimmed() -> None:
    """12 turns, each result 5,000 characters; the last result is age 0 (no user after it)."""
    texts = [f"{n:02d}" + "r" * 4998 for n in range(12)]
    out, st = _tiered(texts, 20_000)
    assert st.request_tokens_before * 100 >= 20_000 * 50
    age = {f"c{n}": 11 - n for n in range(12)}
    for cid, text in out.items():
        if age[cid] < 3:
            assert text == texts[int(cid[1:])], cid
        elif age[cid] >= 10:
            assert text.startswith("[tool result omitted"), cid
        else:
            assert "characters trimmed" in text, cid


def test_a_result_over_4000_characters_keeps_its_first_and_last_1500() -> None:
    exact = "e" * 4000
    over = "".join(chr(65 + i % 26) for i in range(4001))
    filler = ["f"] * 5  # younger turns so both are age >= 3
    out, _ = _tiered([exact, over] + filler, 3_000)
    assert out["c0"] == exact
    head, _, rest = out["c1"].partition("\n[…")
    assert head == over[:1500] and rest.endswith("…]\n" + over[-1500:])


def test_pruning_waits_for_half_the_window() -> None:
    texts = [f"{n:02d}" + "r" * 4998 for n in range(12)]
    _, st = _tiered(texts, 1_000_000)
    total = st.request_tokens_before
    under, _ = _tiered(texts, total * 100 // 49)  # 49 %: untouched
    at, _ = _tiered(texts, total * 100 // 50)  # 50 %: pruned
    assert under == dict(zip(under, texts)) and any("omitted" in t for t in at.values())


def test_a_skill_description_is_listed_within_400_bytes() -> None:
    ann = announce.Announcer(1_000_000)
    listing = ann.head({"skills": [{"name": "long", "description": "d" * 1000}, {"name": "fits", "description": "e" * 400}]})
    assert listing is not None
    lines = {ln.split(":")[0]: ln for ln in listing["text"].splitlines() if ln.startswith("- ")}
    assert lines["- long"] == "- long: " + "d" * 397 + "…" and lines["- fits"] == "- fits: " + "e" * 400


def test_messages_over_25_kb_and_tool_outputs_over_40_kb_move_to_blobs(tmp_path: Path) -> None:
    def moved(ev: dict[str, Any]) -> bool:
        return "blob" in blobs.externalize(ev, tmp_path)

    user = {"kind": "message", "id": "m", "role": "user"}
    tool = {"kind": "tool_result", "call_id": "c", "is_error": False}
    assert not moved({**user, "text": "u" * 25_000}) and moved({**user, "text": "u" * 25_001})
    assert not moved({**tool, "output": "t" * 40_000}) and moved({**tool, "output": "t" * 40_001})


def test_an_image_counts_765_tokens_and_text_a_token_per_4_bytes() -> None:
    text_only = {"role": "user", "text": "x" * 400}
    base = len(canonical(text_only))
    assert tokens.item_tokens(text_only) == base // 4
    assert tokens.item_tokens({**text_only, "images": [{"blob": "0" * 32}, {"blob": "1" * 32}]}) == base // 4 + 2 * 765
    assert tokens.item_tokens({"role": "tool", "call_id": "c", "output": "", "images": [{"data": "A" * 4_000_000}]}) < 800
