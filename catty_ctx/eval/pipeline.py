"""The continuation eval: what a compaction strategy keeps, measured offline on any corpus.

For each summariser x mode, every session of the corpus is driven on a copy through N
compactions (`drive`), then its facts (`facts`: a session's `eval.json`, or derived) are
looked for in the resumed request and the archive (`metrics`), optionally asked of a judge
model (`judge`). The corpus is only read. Sessions run one after another, or in J worker
processes; the report is the same either way.
"""
from __future__ import annotations

import itertools
import multiprocessing
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..compact.summarizers import get_summarizer
from ..defaults import EVAL_COMPACTIONS, EVAL_JOBS, EVAL_MODE, SUMMARIZER
from ..errors import CattyError, UsageError
from ..fleet.runner import Forked, RootRun
from ..fleet.urlcopy import on_copy
from ..fleet.urls import is_url, url_is_root, url_sessions
from ..fleet.workers import can_fork
from ..session.layout import LOG_NAME
from ..session.store import Session
from ..sources import import_log, native_source, resolve, root_sessions
from ..view.fold import plan_file
from . import drive as driving  # the submodule: `eval.drive` stays the module, not its function
from .drive import Strategy
from .facts import FACTS_NAME, Fact, derive_facts, load_facts
from .folders import work_folder
from .judge import Judge
from .metrics import RECALLS, Tally, missed_facts, tally
from .ticks import Ticker, init_worker, worker_step
from .verdict import Evaluation

EVAL_MODES = ("summary", "segments")
FACTS_CHOICES = ("auto", "file")
WORST_SHOWN = 3  # sessions a run names as its worst on a terminal


@dataclass
class Corpus:
    """The sessions to evaluate, with where each came from (`-` for stdin)."""

    paths: list[Path]
    labels: list[str]
    spool: Path | None = None  # the folder holding a copy of stdin, removed after the run

    def close(self) -> None:
        if self.spool is not None:
            shutil.rmtree(self.spool, ignore_errors=True)


def open_corpus(corpus: str, *, stdin: Any = None) -> Corpus:
    """A session, a folder of sessions, or `-` (an event stream, kept in a temporary copy)."""

    if is_url(corpus):
        url_is_root(corpus)  # (a URL names a ROOT: one session or nothing is a usage error)
        urls = url_sessions(corpus)
        if not urls:
            raise UsageError(f"{corpus}: no session found (a session is a folder holding updates.jsonl)")
        return Corpus(urls, list(urls))  # type: ignore[arg-type]  # a URL's sessions stay URLs, read from local copies
    if corpus == "-":
        spool = Path(tempfile.mkdtemp(prefix="catty-ctx-eval-stdin-"))
        src = stdin if stdin is not None else sys.stdin.buffer
        with open(spool / LOG_NAME, "wb") as f:
            shutil.copyfileobj(src, f)
        if (spool / LOG_NAME).stat().st_size == 0:
            shutil.rmtree(spool, ignore_errors=True)
            raise UsageError("-: no session on stdin")
        return Corpus([spool / LOG_NAME], ["-"], spool)
    p = Path(corpus)
    if not p.exists():
        raise UsageError(f"{corpus}: no such file or directory")
    if p.is_file():
        return _with_native([p], [corpus])
    if not resolve(p).is_root:
        return Corpus([p], [corpus])
    found = root_sessions(p, allow_empty=True)
    if not found:
        raise UsageError(f"{corpus}: no session found (a session is a folder holding updates.jsonl, or an agent's own session)")
    return _with_native(found, [str(f) for f in found])


def _with_native(found: list[Any], names: list[str]) -> Corpus:
    """The corpus of FOUND, each native session imported (as `import auto` prints it) into a
    private spool removed after the run: nothing is written beside the source."""
    spool: Path | None = None
    paths: list[Path] = []
    try:
        for i, item in enumerate(found):
            native = native_source(item)
            if native is None:
                paths.append(item)
                continue
            if spool is None:
                spool = Path(tempfile.mkdtemp(prefix="catty-ctx-eval-native-"))
            (spool / str(i)).mkdir()
            import_log(native, spool / str(i) / LOG_NAME, warn=None)
            paths.append(spool / str(i) / LOG_NAME)
    except BaseException:
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)
        raise
    return Corpus(paths, names, spool)


def session_facts(path: Path, choice: str | None) -> list[Fact]:
    """FACTS `file` (the session's eval.json), `auto` (derived), or None: the file when there is one."""

    if is_url(path):
        return on_copy(lambda local: session_facts(Path(local), choice), str(path))
    folder = path if path.is_dir() else path.parent
    file = folder / FACTS_NAME
    if choice == "file" or (choice is None and file.is_file()):
        if not file.is_file():
            raise UsageError(f"{folder}: no {FACTS_NAME} (--facts file); use --facts auto to derive the facts")
        facts = load_facts(file)
        with Session.open(path) as s:
            for _ in s.events():  # a log that is not valid stops the eval here, naming file:line
                pass
        return facts

    with Session.open(path) as s:
        return derive_facts(s.events(), plan_file(s.log_path))


@dataclass
class Task:
    """One session under one strategy: what a worker process needs, nothing more."""

    run: int
    index: int
    source: Path
    dest: Path
    strategy: Strategy
    facts: list[Fact]
    judge: str | None = None
    judge_timeout: float | None = None
    label: str = ""  # the session as the user named it, for messages
    judge_max_bytes: int | None = None
    kept: bool = False  # DEST stays after the run (--out): a failure's request can be named there


def run_task(task: Task, on_step: Callable[[], None] | None = None) -> dict[str, Any]:
    """Drive, score and (optionally) judge one session; a library error is that session's error.
    ON_STEP is told each compaction (in a worker process: the pool's queue)."""

    if is_url(task.source):
        return on_copy(lambda local: run_task(replace(task, source=Path(local)), on_step), str(task.source))
    try:
        d = driving.drive(task.source, task.dest, task.strategy, on_step=on_step or worker_step())
        missed = missed_facts(task.facts, d.items, task.dest)
        t = tally(d, task.facts, missed)
        if task.judge is not None:
            t.asked = len(task.facts)
            t.answered = Judge(task.judge, timeout=task.judge_timeout, max_response_bytes=task.judge_max_bytes).check(d.items, task.facts)
    except CattyError as exc:
        # Name the session the user gave, not the copy the library was working on.
        message = str(exc)
        for copy in (str(task.dest / "updates.jsonl"), str(task.dest)):
            if message.startswith(copy + ": "):
                message = message[len(copy) + 2:]
                break
        return {"run": task.run, "index": task.index, "error": f"{task.label or task.source}: {_request_kept(message, task)}"}
    return {"run": task.run, "index": task.index, "tally": t.as_dict(), "missed": [f.as_dict() for f in missed]}


_SAVED = re.compile(r" \(request saved in ([^()]+)\)")


def _request_kept(message: str, task: Task) -> str:
    """A failed compaction's request, named where it stays: under --out (the copy is kept there),
    or nowhere (a temporary copy is removed: --out keeps it)."""
    m = _SAVED.search(message)
    if m is None:
        return message
    where = f" (request saved in {task.dest / m.group(1)})" if task.kept else " (--out DIR keeps the failed compaction's request)"
    return message[: m.start()] + where + message[m.end():]


def run_task_scratch(task: Task) -> dict[str, Any]:
    """`run_task` driving the copy in a temporary folder of the worker's own (a cluster run with no --out), removed after."""
    scratch = Path(tempfile.mkdtemp(prefix="catty-ctx-eval-"))
    try:
        return run_task(replace(task, dest=scratch / task.dest.name))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _execute(tasks: list[Task], jobs: int, progress: Callable[[Iterator[Any], int], Iterator[Any]] | None,
             engine: Any = None, scratch: bool = False) -> list[dict[str, Any]]:
    """Every task's outcome, in task order, as a `RootRun`: here, in JOBS worker processes, or on
    ENGINE's cluster when given. The progress moves per compaction (each task is its strategy's
    compactions)."""
    ticker = Ticker(progress, sum(t.strategy.compactions for t in tasks))
    outcomes: list[dict[str, Any]] = []

    def failed(task: Task, exc: CattyError) -> None:
        # (run_task makes a drive's errors its outcome; this is the rest: a URL's copy, a worker's)
        outcomes.append({"run": task.run, "index": task.index, "error": f"{task.label or task.source}: {exc}"})

    def topped_up(done: Iterator[tuple[Task, Any]]) -> Iterator[tuple[Task, Any]]:
        """Each task's compactions all counted once it is done (a short or failed session: the rest)."""
        while True:
            before = ticker.done
            got = next(done, None)
            if got is None:
                return
            ticker.tick(got[0].strategy.compactions - (ticker.done - before))
            yield got

    kwargs: dict[str, Any] = {}
    if engine is not None:
        fn, where = run_task_scratch if scratch else run_task, engine
    elif jobs > 1 and len(tasks) > 1 and can_fork():
        # Each worker tells its compactions on STEPS, so the bar moves per compaction.
        steps = multiprocessing.get_context("fork").Queue()
        fn, where = run_task, Forked(jobs, initializer=init_worker, initargs=(steps,), waiting=lambda: ticker.drain(steps), chunk=1)
    else:
        fn, where, kwargs = run_task, None, {"on_step": ticker.tick}
    try:
        for outcome in RootRun(fn, tasks, where, on_error=failed, progress=topped_up, **kwargs):
            outcomes.append(outcome)
    finally:
        ticker.close()
    return outcomes


def _session_name(path: Path | str) -> str:
    """A session's folder name, for its copy's folder (a URL's last part)."""
    if isinstance(path, str):
        return path.rstrip("/").rsplit("/", 1)[-1]
    return path.parent.name if path.is_file() else path.name


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:60] or "run"


@dataclass
class EvalOptions:
    summarizers: list[str] = field(default_factory=lambda: [SUMMARIZER])
    modes: list[str] = field(default_factory=lambda: [EVAL_MODE])
    compactions: int = EVAL_COMPACTIONS
    facts: str | None = None  # auto | file | None (the file where a session has one)
    two_pass: bool = False
    stress: bool = False
    judge: str | None = None
    jobs: int = EVAL_JOBS
    out: str | None = None
    summarizer_options: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    max_response_bytes: int | None = None  # of an openai: summariser's or judge's answer
    retries: int | None = None  # a model summariser's attempts per stage after the first (default: the ladder's)

    def check(self) -> None:
        """Bad options are usage errors before any session is touched."""

        if self.compactions < 1:
            raise UsageError("--compactions must be at least 1")
        if self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if self.retries is not None and self.retries < 0:
            raise UsageError("--retries must be 0 or more")
        if self.facts not in (None, *FACTS_CHOICES):
            raise UsageError(f"--facts {self.facts}: use auto or file")
        for mode in self.modes:
            if mode not in EVAL_MODES:
                raise UsageError(f"unknown mode '{mode}' (use {', '.join(EVAL_MODES)})")
        for spec in self.summarizers:
            get_summarizer(spec, **self.options_for(spec))
        if self.judge is not None:
            Judge(self.judge, timeout=self.timeout, max_response_bytes=self.max_response_bytes)

    def options_for(self, spec: str) -> dict[str, Any]:
        if spec == "extractive":
            return {}
        opts = dict(self.summarizer_options)
        if self.retries is not None:
            opts["attempts"] = self.retries + 1
        if self.timeout is not None:
            opts["timeout"] = self.timeout
        if self.max_response_bytes is not None and spec.startswith("openai:"):
            opts["max_response_bytes"] = self.max_response_bytes
        return opts


def corpus_facts(corpus: Corpus, choice: str | None, *, on_error: Callable[[Any, CattyError], None] | None = None) -> tuple[dict[int, list[Fact]], RootRun]:
    """The facts of each session of CORPUS that can be read, by its number in the corpus, and the
    run that read them (a `RootRun`: a session whose log or eval.json is not valid goes to
    ON_ERROR, given as (its number, its path), and is left out; without ON_ERROR it is raised)."""
    run = RootRun(_facts_of, list(enumerate(corpus.paths)), on_error=on_error, choice=choice)
    return dict(run), run


def _facts_of(session: tuple[int, Path], *, choice: str | None) -> tuple[int, list[Fact]]:
    """(the session's number, its facts) for a session (its number, its path) of a corpus."""
    return session[0], session_facts(session[1], choice)


def evaluate(
    corpus: Corpus,
    opts: EvalOptions | None = None,
    *,
    progress: Callable[[Iterator[Any], int], Iterator[Any]] | None = None,
    engine: Any = None,
    on_error: Callable[[Any, CattyError], None] | None = None,
) -> Evaluation:
    """Every summariser x mode over CORPUS (`run_eval`), each session's facts read first
    (`corpus_facts`): a session that cannot be read goes to ON_ERROR and is left out, the others
    are evaluated (without ON_ERROR, the first such failure is raised)."""
    opts = opts or EvalOptions()
    opts.check()
    found, sessions = corpus_facts(corpus, opts.facts, on_error=on_error)  # every session's facts before any run
    if not found:
        return Evaluation(None, sessions)
    readable = Corpus([corpus.paths[i] for i in found], [corpus.labels[i] for i in found])
    report = _run(readable, opts, list(found.values()), progress, engine)
    return Evaluation(report, sessions, failed=any(row.get("error") for row in report["runs"]), shortfall=below)


def run_eval(
    corpus: Corpus | str,
    opts: EvalOptions | None = None,
    *,
    progress: Callable[[Iterator[Any], int], Iterator[Any]] | None = None,
    engine: Any = None,
) -> dict[str, Any]:
    """The report `{"runs": [...]}` (the `--json` document) for every summariser x mode.

    CORPUS is an opened `Corpus` or what the command line takes (a session, a folder, `-`).
    ENGINE (`cluster.Engine`) runs the sessions on a Dask cluster: its workers read the
    corpus by the same paths, and drive their copies in --out (which they must see too) or
    in temporary folders of their own. A session that cannot be read raises (`evaluate`
    reports it and goes on)."""
    if isinstance(corpus, str):
        opened = open_corpus(corpus)
        try:
            return run_eval(opened, opts, progress=progress, engine=engine)
        finally:
            opened.close()
    report = evaluate(corpus, opts, progress=progress, engine=engine).report
    assert report is not None  # (without a reporter, a session that cannot be read raised)
    return report


def _run(corpus: Corpus, opts: EvalOptions, facts: list[list[Fact]], progress: Callable[[Iterator[Any], int], Iterator[Any]] | None,
         engine: Any) -> dict[str, Any]:
    """The report for the sessions of CORPUS, whose FACTS are read."""
    work, temporary = work_folder(opts.out)
    runs = list(itertools.product(opts.summarizers, opts.modes))
    tasks = []
    for r, (summ, mode) in enumerate(runs):
        strategy = Strategy(summ, mode, opts.compactions, opts.two_pass, opts.options_for(summ), stress=opts.stress)
        run_dir = work / f"{r + 1:02d}-{_slug(summ)}-{mode}"
        for i, path in enumerate(corpus.paths):
            name = f"{i + 1:04d}-{_slug(_session_name(path))}"
            tasks.append(Task(r, i, path, run_dir / name, strategy, facts[i], opts.judge, opts.timeout, corpus.labels[i],
                              opts.max_response_bytes, kept=not temporary))
    try:
        for t in tasks:
            t.dest.parent.mkdir(parents=True, exist_ok=True)
        outcomes = _execute(tasks, opts.jobs, progress, engine, scratch=temporary)
    finally:
        if temporary:
            shutil.rmtree(work, ignore_errors=True)
    report: list[dict[str, Any]] = []
    for r, (summ, mode) in enumerate(runs):
        mine = [o for o in outcomes if o["run"] == r]
        total = Tally()
        per_session = []
        error = None
        for o in mine:
            entry: dict[str, Any] = {"path": corpus.labels[o["index"]]}
            if "error" in o:
                error = error or o["error"]
                entry.update(metrics=None, missed=[], error=o["error"])
            else:
                got = Tally.from_dict(o["tally"])
                total.add(got)
                entry.update(metrics=got.metrics(two_pass=opts.two_pass, judge=opts.judge is not None, stress=opts.stress), missed=o["missed"])
            per_session.append(entry)
        row: dict[str, Any] = {
            "summarizer": summ,
            "mode": mode,
            "compactions": opts.compactions,
            "sessions": len(mine),
            "facts": sum(len(facts[o["index"]]) for o in mine),
            "metrics": None if error else total.metrics(two_pass=opts.two_pass, judge=opts.judge is not None, stress=opts.stress),
            "per_session": per_session,
        }
        if error:
            row["error"] = error
        report.append(row)
    return {"runs": report}


def below(report: dict[str, Any], minimum: float) -> list[str]:
    """What falls under --min-recall: each failed run, and each recall figure below MINIMUM."""

    out = []
    for row in report["runs"]:
        name = f"{row['summarizer']} x {row['mode']}"
        if row.get("error"):
            out.append(f"{name}: failed")
            continue
        for metric in RECALLS.values():
            value = row["metrics"].get(metric)
            if value is not None and value < minimum:
                out.append(f"{name}: {metric} {value} < {minimum}")
    return out
