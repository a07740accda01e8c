"""Pruning: grok-build's tiers (with the age rule fixed), the cache-aware batches, images."""
from __future__ import annotations

from typing import Any

from support import call, msg, result, session_event

from catty_ctx.prune.options import MIB, PruneOptions, PruneStats
from catty_ctx.prune.reuse import prefix_reuse
from catty_ctx.prune.pipeline import prune, prune_items
from catty_ctx.view.fold import ViewItem, stream_view

WINDOW = 200_000


def events(*evs: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(evs) if evs and evs[0].get("kind") == "session" else [session_event(), *evs]
    return [{"v": 1, "seq": i, "ts": "2026-11-01T00:00:00.000Z", **e} for i, e in enumerate(out)]


def turn(n: int, output: str, name: str = "read_file") -> list[dict[str, Any]]:
    """A real user message, an assistant calling one tool, its result."""
    return [msg("user", f"turn {n}", f"u{n}"), msg("assistant", "", f"a{n}"), call(f"c{n}", name, {"n": n}), result(f"c{n}", output)]


def run(evs: list[dict[str, Any]], window: int = WINDOW, **kw: Any) -> tuple[list[dict[str, Any]], Any]:
    st = PruneStats()
    out = [vi.item for vi in prune(evs, PruneOptions(**kw), window=window, stats=st)]
    return out, st


def by_call(items: list[dict[str, Any]]) -> dict[str, str]:
    return {it["call_id"]: it["output"] for it in items if it["role"] == "tool"}


def test_age_counts_real_user_messages_after_the_result_only() -> None:
    evs = events(*turn(1, "x" * 1000), msg("user", "summary", "s1", synthetic="compaction_summary"),
                 msg("user", "reminder", "s2", synthetic="continuation_state"), *turn(2, "y" * 1000), msg("user", "now", "u3"))
    # keep_turns=2 protects ages 0 and 1; c1 has 2 real users after it (u2, u3), c2 has 1.
    out = by_call(run(evs, strategy="tiered", min_percent=0, keep=0, keep_turns=2, omit_age=2)[0])
    assert out["c2"] == "y" * 1000
    assert out["c1"].startswith("[tool result omitted")


def test_tiered_tier_boundaries_at_the_defaults() -> None:
    big = "h" * 1500 + "m" * 1001 + "t" * 1500  # 4,001 characters
    evs = events(*turn(1, big), *turn(2, big), *turn(3, big), *turn(4, "e" * 4000), *turn(5, big), *turn(6, big),
                 *[e for n in range(7, 14) for e in turn(n, "s")], msg("user", "now", "u14"))
    # ages: c(n) has 14 - n real users after it
    out = by_call(run(evs, window=1000, strategy="tiered")[0])
    assert out["c13"] == "s"  # age 1
    assert out["c12"] == "s" and out["c11"] == "s"  # age 2 untouched; age 3 but tiny
    assert out["c6"].startswith("h" * 1500 + "\n[… 1,001 characters trimmed") and out["c6"].endswith("\n" + "t" * 1500)  # age 8
    assert out["c5"].startswith("h" * 1500 + "\n[")  # age 9: still trimmed
    assert out["c4"].startswith("[tool result omitted (older than 10 turns)")  # age 10
    assert out["c1"].startswith("[tool result omitted")


def test_tiered_trims_only_over_4000_characters_and_leaves_3_turns() -> None:
    evs = events(*turn(1, "a" * 4000), *turn(2, "b" * 4001), *turn(3, "c" * 9000), *turn(4, "d" * 9000), *turn(5, "e" * 9000), msg("user", "now", "u6"))
    out = by_call(run(evs, window=1000, strategy="tiered")[0])
    assert out["c1"] == "a" * 4000  # age 5, exactly 4,000: kept
    assert "trimmed by catty-ctx prune" in out["c2"] and "trimmed" in out["c3"]  # ages 4 and 3
    assert out["c4"] == "d" * 9000 and out["c5"] == "e" * 9000  # ages 2 and 1: the 3 most recent turns


def test_tiered_runs_only_from_half_the_window() -> None:
    evs = events(*[e for n in range(1, 13) for e in turn(n, "z" * 5000)], msg("user", "now", "u13"))
    items = list(stream_view(evs))
    total = sum(vi.tokens for vi in items)
    untouched, st = prune_items(items, PruneOptions(strategy="tiered"), total * 2 + 2)  # below 50%
    assert [vi.item for vi in untouched] == [vi.item for vi in items] and st.tool_uses_cleared == 0
    pruned, st = prune_items(items, PruneOptions(strategy="tiered"), total * 2)  # exactly 50%: >=
    assert st.tool_uses_cleared == 3 and st.trimmed == 7


def test_every_rewrite_names_the_seq_and_the_inspect_command() -> None:
    evs = events(*turn(1, "q" * 9000), *turn(2, "r" * 9000), *[e for n in range(3, 13) for e in turn(n, "s")], msg("user", "now", "u13"))
    items, _ = run(evs, window=1000, strategy="tiered", session_ref="sess/dir", clear_inputs=True)
    seq_of = {e.get("call_id"): e["seq"] for e in evs if e["kind"] == "tool_result"}
    call_seq = {e.get("call_id"): e["seq"] for e in evs if e["kind"] == "tool_call"}
    out = by_call(items)
    assert f"seq {seq_of['c1']}, print it with `catty-ctx inspect sess/dir --seq {seq_of['c1']}`" in out["c1"]
    assert f"catty-ctx inspect sess/dir --seq {seq_of['c2']}`" in out["c2"]
    args = {c["call_id"]: c["args"] for it in items for c in it.get("tool_calls", [])}
    assert f"--seq {call_seq['c1']}`" in args["c1"]["cleared"]
    assert args["c12"] == {"n": 12}


def test_tiered_keeps_the_most_recent_tool_uses_and_excluded_tools() -> None:
    evs = events(*turn(1, "k" * 9000, "memory"), *turn(2, "k" * 9000), *[e for n in range(3, 14) for e in turn(n, "s")])
    out = by_call(run(evs, window=1000, strategy="tiered", exclude_tools=frozenset({"memory"}))[0])
    assert out["c1"] == "k" * 9000 and out["c2"].startswith("[tool result omitted")
    out = by_call(run(evs, window=1000, strategy="tiered", keep=13, keep_turns=0)[0])
    assert out["c1"] == "k" * 9000 and out["c2"] == "k" * 9000


def test_clear_at_least_refuses_a_rewrite_worth_less() -> None:
    evs = events(*turn(1, "k" * 9000), *[e for n in range(2, 14) for e in turn(n, "s")])
    _, st = run(evs, window=1000, strategy="tiered")
    assert st.tokens_cleared > 2000
    items, st = run(evs, window=1000, strategy="tiered", clear_at_least=st.tokens_cleared + 1)
    assert st.tokens_cleared == 0 and by_call(items)["c1"] == "k" * 9000


def test_image_hysteresis_removes_oldest_down_to_the_low_mark_and_then_holds() -> None:
    img = "i" * 1000
    opts = dict(image_high=5000, image_low=2500, strategy="tiered", min_percent=100)

    def user(n: int) -> dict[str, Any]:
        return msg("user", f"look {n}", f"u{n}", images=[img])

    def removed(items: list[dict[str, Any]]) -> list[int]:
        return [int(it["text"].split()[1]) for it in items if it["role"] == "user" and "images" not in it]

    evs = events(user(1), user(2), user(3))
    assert removed(run(evs, **opts)[0]) == []  # body under 5,000 bytes
    evs = events(*[user(n) for n in range(1, 6)])  # body crosses 5,000 at the 5th image
    items, st = run(evs, **opts)
    assert removed(items) == [1, 2, 3] and st.images_removed == 3  # body back to <= 2,500
    assert "do not describe it" in items[1]["text"] and f"--seq {items[1]['seq']}`" in items[1]["text"]
    evs6 = events(*[user(n) for n in range(1, 7)])
    assert removed(run(evs6, **opts)[0]) == [1, 2, 3]  # a new image below the high mark changes nothing
    evs8 = events(*[user(n) for n in range(1, 9)])
    assert removed(run(evs8, **opts)[0]) == [1, 2, 3, 4, 5, 6]  # crossing again: the next batch


def test_image_marks_default_to_47_and_25_mib() -> None:
    o = PruneOptions()
    assert (o.image_high, o.image_low) == (47 * MIB, 25 * MIB)


def replay(n_turns: int, size: int, window: int, **kw: Any) -> list[list[ViewItem]]:
    """The pruned request at each real user message of a growing session."""
    evs: list[dict[str, Any]] = []
    reqs = []
    for n in range(1, n_turns + 1):
        evs += turn(n, f"{n}:" + "w" * size)
        full = events(*evs, msg("user", "next", "next"))
        out, _ = prune_items(list(stream_view(full)), PruneOptions(**kw), window)
        reqs.append(out)
    return reqs


def test_cache_aware_keeps_the_prefix_between_batches_and_every_request_within_the_window() -> None:
    window = 20_000
    reqs = replay(60, 4000, window)
    breaks = 0
    for prev, cur in zip(reqs, reqs[1:]):
        assert sum(vi.tokens for vi in cur) < window * 0.9
        r = prefix_reuse([vi.canon for vi in prev], cur)
        if r.items < len(prev) - 1:  # the last item of prev ("next") is replaced by the new turn
            breaks += 1
    assert 0 < breaks <= 10  # the session is 12x the window, yet the prefix moved only a few times
    tiered = replay(60, 4000, window, strategy="tiered")
    tiered_breaks = sum(prefix_reuse([v.canon for v in a], b).items < len(a) - 1 for a, b in zip(tiered, tiered[1:]))
    assert tiered_breaks > 3 * breaks


def test_cache_aware_batch_clears_oldest_first_down_to_the_low_mark() -> None:
    window = 20_000
    evs = events(*[e for n in range(1, 19) for e in turn(n, "w" * 4000)])
    items, st = run(evs, window=window)
    out = by_call(items)
    cleared = [n for n in range(1, 19) if out[f"c{n}"].startswith("[tool result cleared")]
    assert cleared == list(range(1, len(cleared) + 1)) and st.batches >= 1
    assert st.request_tokens_after <= window * 0.9


def test_cache_aware_leaves_a_request_under_the_high_mark_untouched() -> None:
    evs = events(*[e for n in range(1, 10) for e in turn(n, "w" * 4000)])
    items, st = run(evs, window=100_000)
    assert items == list(v.item for v in stream_view(evs)) and st.batches == 0


def test_same_log_same_request_byte_for_byte() -> None:
    evs = events(*[e for n in range(1, 30) for e in turn(n, "w" * 3000)])
    a, _ = prune_items(list(stream_view(evs)), PruneOptions(), 20_000)
    b, _ = prune_items(list(stream_view(evs)), PruneOptions(), 20_000)
    assert [v.canon for v in a] == [v.canon for v in b]


def test_prefix_reuse_counts_the_common_prefix_in_tokens() -> None:
    items = list(stream_view(events(*turn(1, "a" * 400), *turn(2, "b" * 400))))
    changed = items[:3] + [ViewItem({"role": "tool", "call_id": "c1", "output": "x", "is_error": False}, b"x", 1)] + items[4:]
    r = prefix_reuse([v.canon for v in items], changed)
    assert r.items == 3 and r.tokens == sum(v.tokens for v in items[:3]) and r.first_change_index == 3
    assert prefix_reuse([v.canon for v in items], items).ratio == 1.0


def test_usage_of_pruned_requests_keeps_every_request_within_the_window() -> None:
    """A runtime that sends prune's output records usage of the *pruned* request (plus its
    tool schemas); prune must still count those schemas, or requests creep over the window."""
    window, schema = 20_000, 3_000
    log: list[dict[str, Any]] = [session_event(window=window)]

    def send() -> int:
        st = PruneStats()
        req = list(prune(events(*log), PruneOptions(), stats=st))
        sent = sum(v.tokens for v in req) + schema
        assert sent <= window and st.request_tokens_after >= sent - schema
        return sent

    sizes = []
    for n in range(1, 40):
        log.append(msg("user", f"turn {n}", f"u{n}"))
        sent = send()
        log += [msg("assistant", "", f"a{n}"), call(f"c{n}", "read_file", {"n": n}),
                {"kind": "usage", "model": "m", "input": sent, "output": 20, "cache_read": 0, "cache_write": 0, "reasoning": 0},
                result(f"c{n}", "w" * 4000)]
        sent = send()
        log += [msg("assistant", "done", f"d{n}"), {"kind": "usage", "model": "m", "input": sent, "output": 5, "cache_read": 0, "cache_write": 0, "reasoning": 0}]
        sizes.append(sent)
    assert max(sizes) > window * 0.8  # the session did reach the high-water mark, repeatedly


def test_cache_aware_never_touches_recent_turns_or_excluded_tools() -> None:
    evs = events(*turn(1, "m" * 4000, "memory"), *[e for n in range(2, 19) for e in turn(n, "w" * 4000)])
    out = by_call(run(evs, window=20_000, exclude_tools=frozenset({"memory"}))[0])
    assert out["c1"] == "m" * 4000 and out["c2"].startswith("[tool result cleared")
    assert all(out[f"c{n}"] == "w" * 4000 for n in (16, 17, 18))  # ages 2, 1, 0


def test_cache_aware_clear_at_least_skips_small_batches() -> None:
    evs = events(*[e for n in range(1, 23) for e in turn(n, "w" * 4000)])  # 1.15x the window
    items, st = run(evs, window=20_000, clear_at_least=10**6)
    assert st.batches == 0 and st.over_window and all(not it.get("pruned") for it in items)
