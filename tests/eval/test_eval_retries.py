"""eval and a failing summariser: a deterministic failure is asked once, a temporary one as often
as --retries says; the failed compaction's request is named where it stays (under --out); and
the progress moves per compaction."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import orjson
import pytest
from support import cli, cli_on_a_terminal
from support.eval_corpus import failing_summarizer, planted_session


def _model(folder: Path, name: str, body: str) -> str:
    script = folder / f"{name}.py"
    script.write_text("import sys\nsys.stdin.read()\n" + body)
    return f"cmd:{sys.executable} {script}"


def _attempts(out: Path) -> list[list[str]]:
    """Each failed compaction's attempts (outcomes), from the requests kept under OUT."""
    found = []
    for artifact in sorted(out.glob("*/*/compaction_requests/*.json")):
        found.append([a["outcome"] for a in orjson.loads(artifact.read_bytes())["attempts"]])
    return found


def _failure_lines(stderr: bytes) -> list[str]:
    return [ln for ln in stderr.decode().splitlines() if "x segments:" in ln]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    for name in ("s1", "s2", "s3"):
        planted_session(tmp_path / "corpus" / name, sid=name)
    return tmp_path / "corpus"


def test_a_deterministic_failure_is_asked_once_and_its_request_is_named_under_out(corpus: Path, tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CATTY_CTX_RETRY_BACKOFF", raising=False)  # waits as a user gets them: none may be taken
    out = tmp_path / "out"
    r = cli("eval", str(corpus), "--summarizer", failing_summarizer(tmp_path), "--out", str(out), "--json")
    assert r.returncode == 1
    assert _attempts(out) == [["deterministic"]] * 3  # one attempt per session, no retry
    doc = orjson.loads(r.stdout)
    errors = [e["error"] for e in doc["runs"][0]["per_session"]]
    for e in errors:
        named = re.search(r"\(request saved in (.+?\.json)\)", e)
        assert named and Path(named.group(1)).is_file() and Path(named.group(1)).is_relative_to(out), e
    (line,) = _failure_lines(r.stderr)
    assert "model weights not found" in line and str(out) in line


def test_without_out_no_deleted_path_is_named(corpus: Path, tmp_path: Path) -> None:
    r = cli("eval", str(corpus), "--summarizer", failing_summarizer(tmp_path), "--json")
    assert r.returncode == 1
    for e in orjson.loads(r.stdout)["runs"][0]["per_session"]:
        assert "request saved in" not in e["error"] and "--out DIR keeps the failed compaction's request" in e["error"]


@pytest.mark.parametrize("retries", [0, 1, 3])
def test_retries_bounds_the_attempts_at_a_temporary_failure(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            retries: int) -> None:
    monkeypatch.setenv("CATTY_CTX_RETRY_BACKOFF", "0")
    busy = _model(tmp_path, "busy", "sys.stderr.write('try later\\n')\nsys.exit(75)\n")
    short = _model(tmp_path, "short", "print('<summary>Worked on it.</summary>')\n")
    for spec, outcome in ((busy, "transient"), (short, "degenerate")):
        out = tmp_path / f"out-{outcome}-{retries}"
        r = cli("eval", str(corpus), "--summarizer", spec, "--retries", str(retries), "--out", str(out), "--json")
        assert r.returncode == 1, r.stderr
        assert _attempts(out) == [[outcome] * (retries + 1)] * 3


def test_retries_is_refused_below_zero(corpus: Path) -> None:
    from catty_ctx.errors import UsageError
    from catty_ctx.eval.pipeline import EvalOptions

    r = cli("eval", str(corpus), "--retries", "-1")
    assert r.returncode == 2 and b"--retries" in r.stderr
    with pytest.raises(UsageError, match="--retries"):
        EvalOptions(retries=-1).check()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_progress_moves_per_compaction(corpus: Path, jobs: str) -> None:
    code, _out, shown = cli_on_a_terminal("eval", str(corpus), "--compactions", "2", "--jobs", jobs, "--json", columns=160)
    assert code == 0
    steps = {int(m) for m in re.findall(rb"(\d+)/6\b", shown)}  # 3 sessions x 2 compactions
    assert 6 in steps and len(steps) >= 2, shown[-400:]
