"""`catty-ctx eval` as a library: planted facts, derived facts, the figures of a run."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from catty_ctx.errors import DataError, UsageError
from catty_ctx.eval.pipeline import open_corpus, session_facts
from catty_ctx.eval.drive import cut_points
from catty_ctx.eval.facts import Fact, derive_facts, error_line, load_facts
from catty_ctx.importers.pipeline import import_to_dir
from catty_ctx.session.store import Session
from support import FIXTURES, call, msg, result
from support.eval_corpus import CONSTRAINT, EDITED, ERROR, JOB, TODO, copying_summarizer, failing_summarizer, planted_session, poor_summarizer, tree_bytes


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATTY_CTX_RETRY_BACKOFF", "0")


def _run(corpus: Path, **kw: object) -> dict:
    """The library's public entry, as an agent runtime would call it."""
    import catty_ctx

    return catty_ctx.run_eval(str(corpus), catty_ctx.EvalOptions(**kw))  # type: ignore[arg-type]


def _runs(report: dict) -> dict[tuple[str, str], dict]:
    return {(r["summarizer"], r["mode"]): r for r in report["runs"]}


def test_extractive_segments_keeps_every_planted_fact_over_three_compactions(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    report = _run(tmp_path / "corpus", out=str(tmp_path / "out"))
    (run,) = report["runs"]
    assert (run["summarizer"], run["mode"], run["compactions"], run["sessions"], run["facts"]) == ("extractive", "segments", 3, 1, 5)
    m = run["metrics"]
    assert (m["state_recall"], m["instruction_retention"], m["detail_recovery"]) == (1.0, 1.0, 1.0)
    assert m["integrity_violations"] == 0
    assert run["per_session"][0]["missed"] == []
    # The copy really went through three compactions, each with its segment.
    copy = next((tmp_path / "out").glob("*/*"))
    kinds = [orjson.loads(line)["kind"] for line in (copy / "updates.jsonl").read_bytes().splitlines()]
    assert kinds.count("compaction") == 3 and kinds[-1] == "compaction"
    assert len(list((copy / "segments").glob("segment_*.md"))) == 3


def test_a_poor_summariser_in_summary_mode_scores_strictly_lower_on_details(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    poor = poor_summarizer(tmp_path)
    report = _run(tmp_path / "corpus", summarizers=["extractive", poor], modes=["segments", "summary"])
    runs = _runs(report)
    good = runs[("extractive", "segments")]["metrics"]
    bad = runs[(poor, "summary")]["metrics"]
    assert bad["detail_recovery"] < good["detail_recovery"] == 1.0
    assert {"kind": "detail", "text": ERROR} in runs[(poor, "summary")]["per_session"][0]["missed"]
    # The same poor summary still finds the detail when the span is archived in segments.
    assert runs[(poor, "segments")]["metrics"]["detail_recovery"] == 1.0
    # State rides in the continuation state whatever the summary says.
    assert bad["state_recall"] == 1.0


def test_the_corpus_is_byte_identical_after_eval(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    planted_session(corpus / "a")
    planted_session(corpus / "b", sid="other", facts=False)
    shutil.copytree(FIXTURES / "import" / "claude", tmp_path / "src")
    import_to_dir("claude", tmp_path / "src/projects/-home-dev-shop/sess-0001.jsonl", corpus / "claude")
    before = tree_bytes(corpus)
    _run(corpus, modes=["summary", "segments"], two_pass=True)
    _run(corpus / "a" / "updates.jsonl")
    assert tree_bytes(corpus) == before


def _import(fmt: str, source: Path, dest: Path) -> Path:
    import_to_dir(fmt, source, dest)
    return dest


def _kinds_present(session: Path) -> set[str]:
    """Which kinds of fact the source holds, judged from its events directly."""
    present = set()
    with Session.open(session) as s:
        for ev in s.events():
            if ev.get("agent"):
                continue
            if ev["kind"] == "state" and ev["facet"] in ("todos", "plan", "edited_files", "jobs", "subagents"):
                present.add("state")
            if ev["kind"] == "state" and ev["facet"] == "instructions" and ev["value"]:
                present.add("instruction")
            if ev["kind"] == "message" and ev["role"] == "user" and not ev.get("synthetic") and any(w in ev["text"].lower() for w in ("always", "never", "don't", "must")):
                present.add("instruction")
            if ev["kind"] == "tool_result" and ev["is_error"]:
                present.add("detail")
    return present


@pytest.mark.parametrize(
    "fmt,source,expected",
    [
        ("claude", "claude/projects/-home-dev-shop/sess-0001.jsonl", {Fact("state", "/home/dev/shop/cart.py"), Fact("detail", "1 failed: test_coupon_once expected 90, got 70")}),
        ("codex", "codex/sessions/2026/10/02/rollout-2026-10-02T10-00-00-5f0c1c2a-0000-4000-8000-00000000c0de.jsonl",
         {Fact("state", "src/cli.py"), Fact("instruction", "Run ruff before committing."), Fact("detail", '{"output":"","metadata":{"exit_code":1,"duration_seconds":0.1}}')}),
    ],
)
def test_auto_facts_of_imported_sessions_cover_each_kind_present_deterministically(tmp_path: Path, fmt: str, source: str, expected: set[Fact]) -> None:
    session = _import(fmt, FIXTURES / "import" / source, tmp_path / "s")
    again = _import(fmt, FIXTURES / "import" / source, tmp_path / "t")
    facts = session_facts(session, "auto")
    assert facts == session_facts(again, "auto") == session_facts(session, "auto")
    present = _kinds_present(session)
    assert present and present <= {f.kind for f in facts}
    assert expected <= set(facts)


def test_a_failed_results_first_error_line_is_a_detail_even_when_it_is_no_stack_trace() -> None:
    assert error_line("F.\n1 failed: test_x expected 1, got 2") == "1 failed: test_x expected 1, got 2"
    assert error_line("\n  permission denied: /etc/shadow  \nmore") == "permission denied: /etc/shadow"
    assert error_line("{}\nthe build stopped half way") == "the build stopped half way"  # nothing names an error
    assert error_line("F.\n.") is None


def test_derived_facts_follow_the_log(tmp_path: Path) -> None:
    s = planted_session(tmp_path / "s", facts=False)
    with Session.open(s) as session:
        facts = derive_facts(session.events())
    assert Fact("state", TODO) in facts and Fact("state", JOB) in facts and Fact("state", EDITED) in facts
    assert Fact("instruction", CONSTRAINT) in facts and Fact("detail", ERROR) in facts
    assert Fact("state", "Fix the tokenizer") not in facts  # completed: not active at the end
    assert [f.kind for f in facts] == sorted((f.kind for f in facts), key=["state", "instruction", "detail"].index)


@pytest.mark.parametrize(
    "content,problem",
    [
        (b"{not json", "invalid JSON"),
        (b'{"facts": {"kind": "state"}}', "not an eval facts file"),
        (b'{"facts": [{"kind": "mood", "text": "x"}]}', "facts[0].kind"),
        (b'{"facts": [{"kind": "state", "text": ""}]}', "facts[0].text"),
        (b'[{"kind": "state", "text": "x"}]', "not an eval facts file"),
    ],
)
def test_an_eval_json_of_another_shape_is_a_data_error_naming_it(tmp_path: Path, content: bytes, problem: str) -> None:
    (tmp_path / "eval.json").write_bytes(content)
    with pytest.raises(DataError) as exc:
        load_facts(tmp_path / "eval.json")
    assert str(tmp_path / "eval.json") in str(exc.value) and problem in str(exc.value)


def test_a_failing_summariser_fails_its_run_and_the_others_go_on(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    broken = failing_summarizer(tmp_path)
    runs = _runs(_run(tmp_path / "corpus", summarizers=[broken, "extractive"], modes=["summary"]))
    bad = runs[(broken, "summary")]
    assert bad["metrics"] is None and "model weights not found" in bad["error"]
    assert bad["per_session"][0]["error"] == bad["error"]
    assert runs[("extractive", "summary")]["metrics"]["state_recall"] == 1.0


def test_no_session_in_the_corpus_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError):
        open_corpus(str(tmp_path / "empty"))


def test_parallel_jobs_give_the_same_figures(tmp_path: Path) -> None:
    for i in range(3):
        planted_session(tmp_path / "corpus" / f"s{i}", sid=f"s{i}", turns=5 + i)
    one = _run(tmp_path / "corpus", modes=["summary", "segments"])
    two = _run(tmp_path / "corpus", modes=["summary", "segments"], jobs=2)

    def stable(report: dict) -> list:
        return [
            (r["summarizer"], r["mode"], [(e["path"], {k: v for k, v in e["metrics"].items() if not k.endswith("_seconds")}, e["missed"]) for e in r["per_session"]])
            for r in report["runs"]
        ]

    assert stable(one) == stable(two)


def test_two_pass_reports_prefire_hits_and_waste(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    (run,) = _run(tmp_path / "corpus", two_pass=True, out=str(tmp_path / "out"))["runs"]
    m = run["metrics"]
    # Nothing changes the prefix between pass 1 and the compaction: every note is used.
    assert m["prefire_hit_rate"] == 1.0 and m["wasted_tokens"] == 0
    copy = next((tmp_path / "out").glob("*/*"))
    events = [orjson.loads(line) for line in (copy / "updates.jsonl").read_bytes().splitlines()]
    assert [e["two_pass"]["hit"] for e in events if e["kind"] == "compaction"] == [True, True, True]
    assert "prefire_hit_rate" not in _run(tmp_path / "corpus")["runs"][0]["metrics"]


@pytest.mark.parametrize("window", [10_000, 200_000])
def test_two_pass_recovers_as_many_details_as_one_pass_on_a_small_window(tmp_path: Path, window: int) -> None:
    """At a window of 10,000 tokens pass 2 had no room for the live tail and summarised the note
    alone, reporting a hit: a detail of the latest turn fell from 1.0 to 0.0 in summary mode."""
    s = planted_session(tmp_path / "corpus" / "s1", window=window)
    late = "E   KeyError: 'zq_latest' in resolve_alias"
    Session.open(s).append([msg("user", "Now run the alias tests.", "u-late"), call("c-late", "run_terminal_cmd", {"command": "pytest tests/test_alias.py"}),
                            result("c-late", f"FAILED\n{late}\n1 failed", is_error=True), msg("assistant", "resolve_alias fails; reading it next.", "a-late")])
    (s / "eval.json").write_bytes(orjson.dumps({"facts": [{"kind": "detail", "text": late}]}))
    opts = {"summarizers": [copying_summarizer(tmp_path)], "modes": ["summary"], "compactions": 1}
    one, two = (_run(tmp_path / "corpus", two_pass=tp, **opts)["runs"][0]["metrics"] for tp in (False, True))
    assert two["detail_recovery"] == one["detail_recovery"] == 1.0
    # No room for a note beside the tail: pass 1 is refused before it spends anything.
    assert two["prefire_hit_rate"] == (1.0 if window == 200_000 else None)
    assert (two["prefires_refused"] > 0) is (window != 200_000) and (two["pass1_tokens"] > 0) is (window == 200_000)


def test_cut_points_split_turns_evenly_and_fall_back_to_events() -> None:
    assert cut_points([0, 10, 20, 30, 40, 50], 60, 3) == [20, 40]
    assert cut_points([0, 10], 20, 3) == [7, 14]  # too few turns: even event boundaries
    assert cut_points([0], 1, 3) == []


def test_requests_of_a_long_session_are_sampled_but_each_compaction_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from catty_ctx.eval import drive as drive_module
    from catty_ctx.eval.drive import Strategy, drive

    s = planted_session(tmp_path / "s", turns=12)
    every = drive(s, tmp_path / "every", Strategy())
    assert len(every.reuse) == 12 + 3 - 1  # one request a turn, one after each compaction
    monkeypatch.setattr(drive_module, "MAX_REQUESTS", 4)
    sampled = drive(s, tmp_path / "sampled", Strategy())
    assert 3 + 3 <= len(sampled.reuse) + 1 < len(every.reuse) + 1
    assert min(sampled.reuse) == min(every.reuse)  # the drop right after a compaction is kept


def test_what_a_rewind_took_off_the_branch_is_no_fact(tmp_path: Path) -> None:
    from support import call, msg, result, session_event, write_log

    s = write_log(tmp_path / "s", [
        session_event(), msg("user", "List the tests.", "u1"), msg("assistant", "", "a1"), call("c1", "shell", {"command": "ls tests"}),
        result("c1", "ls: cannot access 'tests': No such file or directory", is_error=True),
        msg("user", "Now run them.", "u2"), msg("assistant", "", "a2"), call("c2", "shell", {"command": "pytest"}),
        result("c2", "ImportError: no module named app", is_error=True),
        {"kind": "rewind", "to_turn": 1}, msg("user", "Instead, count the lines.", "u3"),
    ])
    assert [f.text for f in session_facts(s, "auto") if f.kind == "detail"] == ["ls: cannot access 'tests': No such file or directory"]


def test_a_pass_one_note_made_stale_before_its_compaction_is_counted_as_waste(tmp_path: Path) -> None:
    from support import msg, session_event, write_log

    evs = [session_event(window=200_000), msg("system", "You are a coding agent.", "sys")]
    for t in range(1, 7):
        evs += [msg("user", f"Turn {t}: carry on with the refactor of module {t}.", f"u{t}"), msg("assistant", "Done. " * 40, f"a{t}")]
    evs.append({"kind": "rewind", "to_turn": 2})  # the last turn takes turns 3..6 off the branch
    write_log(tmp_path / "corpus" / "s", evs)
    (run,) = _run(tmp_path / "corpus", compactions=1, two_pass=True, summarizers=[copying_summarizer(tmp_path)])["runs"]
    m = run["metrics"]
    # The waste is what pass 1 really spent (its prompt and answer), not the size of its note.
    assert m["prefire_hit_rate"] == 0.0 and m["wasted_tokens"] == m["pass1_tokens"] > 1_000


def test_a_summary_under_the_degenerate_floor_is_retried_then_fails_its_run(tmp_path: Path) -> None:
    import sys

    planted_session(tmp_path / "corpus" / "s1")
    terse = tmp_path / "terse.py"
    terse.write_text("import sys\nsys.stdin.read()\nprint('<summary>Worked on the parser.</summary>')\n")
    spec = f"cmd:{sys.executable} {terse}"
    report = _run(tmp_path / "corpus", summarizers=[spec, "extractive"], out=str(tmp_path / "out"))
    bad, good = report["runs"]
    assert bad["metrics"] is None and "degenerate summary" in bad["error"] and "after 3 attempts" in bad["error"]
    assert bad["error"].startswith(str(tmp_path / "corpus" / "s1") + ": ")  # the user's session, not the copy
    (artifact,) = (tmp_path / "out").glob("01-*/*/compaction_requests/*.json")
    assert [a["outcome"] for a in orjson.loads(artifact.read_bytes())["attempts"]] == ["degenerate"] * 3
    assert good["metrics"]["state_recall"] == 1.0
