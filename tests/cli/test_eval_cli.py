"""`catty-ctx eval` from the shell: the --json shape, exit codes, stdin, --facts-only, judges."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from catty_ctx.eval.pipeline import EvalOptions, open_corpus, run_eval
from catty_ctx.eval.facts import KINDS
from support import cli, cli_on_a_terminal
from support.eval_corpus import ERROR, FACTS, failing_summarizer, planted_session, poor_summarizer, reader_judge, tree_bytes
from support.scripted_server import ScriptedServer, error, sse

METRICS = {
    "state_recall", "instruction_retention", "detail_recovery", "integrity_violations", "summarizer_seconds",
    "user_wait_seconds", "background_seconds",    "summarizer_input_tokens", "summarizer_output_tokens", "summary_tokens", "tokens_saved", "cached_input_ratio",
}


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATTY_CTX_RETRY_BACKOFF", "0")


def _json(proc) -> dict:  # type: ignore[no-untyped-def]
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return orjson.loads(proc.stdout)


def test_json_document_has_the_documented_shape(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    doc = _json(cli("eval", str(tmp_path / "corpus"), "--json"))
    assert list(doc) == ["runs"]
    (run,) = doc["runs"]
    assert list(run) == ["summarizer", "mode", "compactions", "sessions", "facts", "metrics", "per_session"]
    assert set(run["metrics"]) == METRICS
    (entry,) = run["per_session"]
    assert list(entry) == ["path", "metrics", "missed"] and entry["path"] == str(tmp_path / "corpus" / "s1")
    assert set(entry["metrics"]) == METRICS


def test_a_pipe_gets_one_json_line_per_run(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    proc = cli("eval", str(tmp_path / "corpus"), "--mode", "summary", "--mode", "segments", check=True)
    lines = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["summarizer"], r["mode"]) for r in lines] == [("extractive", "summary"), ("extractive", "segments")]


def test_an_event_stream_on_stdin_is_a_corpus_of_one(tmp_path: Path) -> None:
    s = planted_session(tmp_path / "s", facts=False)
    doc = _json(cli("eval", "-", "--json", input=(s / "updates.jsonl").read_bytes()))
    (run,) = doc["runs"]
    assert run["sessions"] == 1 and run["per_session"][0]["path"] == "-"
    assert run["metrics"]["detail_recovery"] == 1.0


def test_facts_only_prints_an_eval_json_that_loads_back(tmp_path: Path) -> None:
    s = planted_session(tmp_path / "s", facts=False)
    proc = cli("eval", str(s), "--facts-only", check=True)
    doc = orjson.loads(proc.stdout)
    assert {f["kind"] for f in doc["facts"]} == set(KINDS)
    (s / "eval.json").write_bytes(proc.stdout)
    again = orjson.loads(cli("eval", str(s), "--facts-only", "--facts", "file", check=True).stdout)
    assert again == doc
    assert not list(tmp_path.glob("**/segments"))  # nothing was driven


def test_a_corpus_with_no_session_exits_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = cli("eval", str(tmp_path / "empty"))
    assert proc.returncode == 2 and b"no session" in proc.stderr and b"Traceback" not in proc.stderr
    assert cli("eval", str(tmp_path / "missing")).returncode == 2


def test_an_eval_json_of_another_shape_exits_65_naming_it(tmp_path: Path) -> None:
    s = planted_session(tmp_path / "corpus" / "s1")
    (s / "eval.json").write_bytes(b'{"facts": [{"kind": "state"}]}')
    before = tree_bytes(tmp_path / "corpus")
    proc = cli("eval", str(tmp_path / "corpus"))
    assert proc.returncode == 65
    assert proc.stderr.decode().count("\n") == 1 and str(s / "eval.json") in proc.stderr.decode()
    assert proc.stdout == b"" and tree_bytes(tmp_path / "corpus") == before


def test_facts_file_without_an_eval_json_is_a_usage_error(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1", facts=False)
    proc = cli("eval", str(tmp_path / "corpus"), "--facts", "file")
    assert proc.returncode == 2 and b"eval.json" in proc.stderr


def test_a_failing_summariser_is_reported_with_its_error_and_the_others_go_on(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    broken = failing_summarizer(tmp_path)
    proc = cli("eval", str(tmp_path / "corpus"), "--summarizer", broken, "--summarizer", "extractive", "--json")
    assert proc.returncode == 1
    bad, good = _json(proc)["runs"]
    assert bad["summarizer"] == broken and bad["metrics"] is None and "exited 4: model weights not found" in bad["error"]
    assert good["metrics"]["state_recall"] == 1.0
    assert b"model weights not found" in proc.stderr and b"Traceback" not in proc.stderr


def test_min_recall_exits_1_below_it_and_0_at_or_above(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    poor = poor_summarizer(tmp_path)
    low = cli("eval", str(tmp_path / "corpus"), "--summarizer", poor, "--mode", "summary", "--min-recall", "0.9", "--json")
    assert low.returncode == 1 and b"detail_recovery" in low.stderr
    assert cli("eval", str(tmp_path / "corpus"), "--min-recall", "1.0", "--json").returncode == 0
    # Without --min-recall a completed run exits 0 whatever its scores.
    assert cli("eval", str(tmp_path / "corpus"), "--summarizer", poor, "--mode", "summary", "--json").returncode == 0


def test_out_keeps_the_copies_and_refuses_a_folder_in_use(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    cli("eval", str(tmp_path / "corpus"), "--out", str(tmp_path / "out"), "--json", check=True)
    (copy,) = (tmp_path / "out").glob("*/*")
    assert (copy / "summary.json").is_file() and (copy / "segments" / "INDEX.md").is_file()
    again = cli("eval", str(tmp_path / "corpus"), "--out", str(tmp_path / "out"))
    assert again.returncode == 2 and b"not empty" in again.stderr


def test_jobs_runs_sessions_in_parallel_processes_with_the_same_answer(tmp_path: Path) -> None:
    for i in range(3):
        planted_session(tmp_path / "corpus" / f"s{i}", sid=f"s{i}")
    one = _json(cli("eval", str(tmp_path / "corpus"), "--json"))
    two = _json(cli("eval", str(tmp_path / "corpus"), "--json", "--jobs", "2"))
    for doc in (one, two):
        for run in doc["runs"]:
            for metrics in (run["metrics"], *(e["metrics"] for e in run["per_session"])):
                for timing in ("summarizer_seconds", "user_wait_seconds", "background_seconds"):
                    metrics.pop(timing)
    assert one == two


def test_a_terminal_gets_a_table_with_the_worst_sessions(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    poor = poor_summarizer(tmp_path)
    code, err, shown = cli_on_a_terminal("eval", str(tmp_path / "corpus"), "--summarizer", poor, "--mode", "summary", stream="stdout", columns=400)  # wide: the tmp path is long
    text = shown.decode()
    assert code == 0, err
    assert "detail" in text and "worst sessions" in text and "detail: E   ValueError:" in text


# -- the successor check ------------------------------------------------------------------


def test_a_cmd_judge_tells_a_good_strategy_from_a_poor_one(tmp_path: Path) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    poor = poor_summarizer(tmp_path)
    judge = reader_judge(tmp_path)
    doc = _json(cli("eval", str(tmp_path / "corpus"), "--summarizer", "extractive", "--summarizer", poor, "--mode", "summary", "--judge", judge, "--json"))
    good, bad = (r["metrics"]["successor_recall"] for r in doc["runs"])
    # The reader gives back what its context holds: extractive keeps all but the exception line
    # (its error digest keeps a failure's first line); the fixed sentence keeps only the state.
    assert (good, bad) == (0.8, 0.6)


def test_an_openai_judge_is_asked_each_fact_over_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    answers = [sse("I believe it was: ", FACTS[0]["text"]), sse("no idea")] + [sse(f["text"]) for f in FACTS[2:]]
    with ScriptedServer(answers) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        c = open_corpus(str(tmp_path / "corpus"))
        report = run_eval(c, EvalOptions(judge="openai:judge-model"))
    (run,) = report["runs"]
    assert run["metrics"]["successor_recall"] == 0.8  # four of five facts given back in full
    assert len(server.requests) == len(FACTS)
    first = server.requests[0]
    assert first["model"] == "judge-model" and first["path"] == "/v1/chat/completions"
    user = first["messages"][-1]["content"]
    assert "<conversation>" in user and "«Add a regression»" in user and FACTS[0]["text"] not in user.split("</conversation>")[1]


def test_a_judge_that_fails_fails_its_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted_session(tmp_path / "corpus" / "s1")
    with ScriptedServer([error(401, "bad key")] * 5) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        report = run_eval(open_corpus(str(tmp_path / "corpus")), EvalOptions(judge="openai:judge-model"))
    (run,) = report["runs"]
    assert run["metrics"] is None and "judge openai:judge-model" in run["error"] and "bad key" in run["error"]
    assert ERROR  # the planted detail is what the judge would have been asked about


def test_a_log_that_is_not_valid_exits_65_naming_file_and_line(tmp_path: Path) -> None:
    s = planted_session(tmp_path / "corpus" / "s1")
    log = s / "updates.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3]) + b"{not json}\n" + b"".join(lines[4:]))
    proc = cli("eval", str(tmp_path / "corpus"))
    assert proc.returncode == 65 and f"{log}:4".encode() in proc.stderr and proc.stdout == b""
