"""The usage ledger: where the tokens and the money went (docs/design.md#m9, #w9).

Reads the logs of five agents as they lie on disk and turns each provider call into one record:
catty sessions (`usage` events, with `agent` and `incomplete`), Claude Code trees
(projects/<project>/<session>.jsonl and their subagent files), Codex trees
(sessions/YYYY/MM/DD/rollout-*.jsonl, and the `.jsonl.zst` Codex compresses them into after a
week, read through the zstd program: see `..compressed`), Gemini CLI chats (both forms) and
opencode's storage tree, database and exports; with no PATH, the agents' standard homes. Then it
dedupes the records across files, prices them at their dates from the price library (and the
user's tables), and folds them into rows by model, day, week, month, session, project or agent.

One mechanism per module: `walk` (discovery and its remembered listings), `claude`,
`codex`, `gemini`, `opencode`, `catty` (a parser per format, sharing `lines`; `prefire` reads a catty session's
two-pass pass-1 spend that waits in its prefire cache), `records` (the typed records),
`filescan` (the scan, workers from `..workers`), `filecache` (the per-file cache), `prices` (and `library`, the
price library resolved once per model), `copies` (the dedupe rules: one record per call), `ledger` (the fold),
`kept` (the fold kept between runs, adjusted when logs only grew), `answers` (the answer cache, keyed
with `pricefiles`), `warm` (a cached answer found before the rest loads), `times`; this module
runs them as one call, `usage`.

Speed comes from four things: a byte prefilter (only lines holding a usage marker are
parsed, found with one C-level search over a memory map), forked workers taking files from a
queue, an incremental per-file cache keyed by path, size, mtime and inode that, for a file
that only grew, parses the appended bytes alone, and an answer cache that serves a question
asked before about unchanged files (checked with one stat per folder and per log) without
loading the parsers at all. Names are loaded on first use (`__getattr__`) for the same reason.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys

from ..defaults import USAGE_BY as BY_CHOICES
from ..errors import CattyError, DataError, UsageError
from ..fleet.urls import is_url
from ..session.compressed import ZSTD_MAGIC, program
from .answers import answers_path, query_key, question, read_answers, write_answers
from .cachefiles import cache_file, index_file
from .outcome import Ledger, Scan
from .pricefiles import price_files
from .walk import AGENTS, Listings, homes, survey
from .warm import days_asked, refused_empty, taken

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import IO, Any

    from .filescan import Progress
    from .walk import Survey

    Render = Callable[[Ledger, Scan], Any]

# Public names of the submodules, imported when first asked for (those imported above are
# plain attributes: Ledger, Scan, BY_CHOICES).
_LAZY = {
    "discover": "walk", "survey": "walk", "Listings": "walk", "CATTY": "walk", "CLAUDE": "walk", "CODEX": "walk", "GEMINI": "walk",
    "OPENCODE": "walk", "homes": "walk",
    "Record": "records", "FileEntry": "records", "MAIN_AGENT": "records", "UNKNOWN_MODEL": "records",
    "scan": "filescan", "scan_file": "filescan", "validate_catty_logs": "filescan", "BAD_SAMPLES_PER_FILE": "filescan",
    "PARALLEL_MIN_BYTES": "filescan",
    "Prices": "prices", "load_prices": "prices", "price_tokens": "prices", "call_cost": "prices", "TIER_TOKENS": "prices",
    "TIER_SUFFIX": "prices",
    "collapse": "copies", "dedupe": "copies", "build_ledger": "ledger",
    "parse_day": "times", "timezone_named": "times",
    "cache_dir": "cachefiles", "CACHE_VERSION": "cachefiles", "ANSWERS_KEPT": "answers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def usage(paths: Sequence[str | os.PathLike[str]] = (), *, by: str = "model", since: str | None = None, until: str | None = None,
          timezone_name: str | None = None, prices_file: str | os.PathLike[str] | None = None, jobs: int | None = None,
          use_cache: bool = True, progress: Progress | None = None, stdin: IO[bytes] | None = None,
          strict: bool = False, render: Render | None = None, engine: Any = None, allow_empty: bool = False) -> tuple[Ledger, Scan]:
    """The whole pipeline as one call: scan PATHS, dedupe, price, fold by BY.

    No PATHS: the agents' standard homes that exist (`walk.homes`), named in the ledger's
    `sources`; a UsageError naming what was looked for when none does. A PATH that holds no
    session of any agent is a UsageError ("no session under PATH") unless ALLOW_EMPTY; a file
    that is no agent's log a DataError naming what it is not.
    A PATH of `-` reads one log from stdin (any of the kinds; never cached). With the
    cache, a question asked before about files that have not changed since is answered from
    the answer cache without reading the per-file cache, resolving prices or importing
    the parsers. RENDER(ledger, scan) is kept with the answer (the CLI keeps its printed
    forms there) and comes back as `ledger.rendered` when the answer is served from the cache.
    ENGINE (`cluster.Engine`) parses the files the cache does not know on a Dask cluster (the
    caches, the dedupe and the fold stay here); an answer served from the cache never asks it.
    When logs only grew since the last run, the kept fold is adjusted (see `kept`) and the Scan
    holds only what was read then: its `records` are empty (`scan` gives every record).
    """
    sources: list[tuple[str, str]] | None = None
    if not paths:
        sources, looked = homes()
        if not sources:
            raise UsageError(f"no agent home found (looked for {', '.join(looked)}); name a PATH")
        paths = [folder for _agent, folder in sources]
    if not any(os.fspath(p) == "-" for p in paths):
        return _without_gc(_usage, paths, by=by, since=since, until=until, timezone_name=timezone_name, prices_file=prices_file, jobs=jobs,
                      use_cache=use_cache, progress=progress, strict=strict, render=render, engine=engine, allow_empty=allow_empty,
                      sources=sources)
    import shutil
    import tempfile

    from ..session.jsonl import STDIN_NAME

    source = stdin if stdin is not None else sys.stdin.buffer
    with tempfile.TemporaryDirectory(prefix="catty-ctx-") as spool:
        first = source.read(len(ZSTD_MAGIC))
        # A compressed rollout piped in (`cat rollout-….jsonl.zst | catty-ctx usage -`) is read as the file would be.
        piped = os.path.join(spool, "stdin.jsonl.zst" if first == ZSTD_MAGIC else "stdin.jsonl")
        with open(piped, "wb") as out:
            out.write(first)
            shutil.copyfileobj(source, out, 1 << 20)
        real = [piped if os.fspath(p) == "-" else p for p in paths]
        try:
            ledger, result = _without_gc(_usage, real, by=by, since=since, until=until, timezone_name=timezone_name, prices_file=prices_file,
                                    jobs=jobs, use_cache=False, progress=progress, strict=strict, engine=engine, allow_empty=allow_empty)
        except CattyError as exc:
            raise type(exc)(str(exc).replace(piped, STDIN_NAME), exit_code=exc.exit_code) if type(exc) is not DataError else \
                DataError(str(exc).replace(piped, STDIN_NAME)) from None
    # Named as every command names a stream it reads: `<stdin>:LINE: why`.
    result.bad_samples = [sample.replace(piped, STDIN_NAME) for sample in result.bad_samples]
    return ledger, result


def _without_gc(run: Callable[..., tuple[Ledger, Scan]], *args: Any, **kwargs: Any) -> tuple[Ledger, Scan]:
    """RUN(*ARGS, **KWARGS) with the cyclic garbage collector paused: a scan makes tuples by the
    hundred thousand (per file, call and alias), none in a cycle, which the collector would walk
    again and again as they pile up; what they leave is freed by reference counting as ever."""
    if not gc.isenabled():
        return run(*args, **kwargs)
    gc.disable()
    try:
        return run(*args, **kwargs)
    finally:
        gc.enable()


def _refusal(arg: str, files: int, not_logs: list[str], allow_empty: bool) -> CattyError | None:
    """Why a PATH that holds no session of any agent is refused (FILES: the logs found in it); None when it is not."""
    if files:
        return None
    if os.path.isfile(arg) and not_logs:
        return DataError(f"not a {AGENTS} log", path=arg)
    if not allow_empty:
        return UsageError(f"no session under {arg} (no {AGENTS} log; --allow-empty reports it as empty)")
    return None


def strict_refusal(scan: Scan) -> DataError | None:
    """--strict: the refusal of a scan that met unreadable lines (the first one named); None when it met none."""
    if not scan.bad_lines:
        return None
    first = scan.bad_samples[0] if scan.bad_samples else "unreadable lines"
    more = f" (and {scan.bad_lines - 1} more)" if scan.bad_lines > 1 else ""
    return DataError(f"{first}{more}; --strict refuses to skip them")


def _most_severe(errors: list[CattyError]) -> CattyError:
    """What a run over many PATHs that met ERRORS exits with: the most severe code, by the one rule
    of a ROOT's commands (docs/spec.md#a-root-of-sessions), the first PATH's of that code."""
    from ..fleet.runner import most_severe

    code = most_severe(e.exit_code for e in errors)
    return next(e for e in errors if e.exit_code == code)


def _usage(paths: Sequence[str | os.PathLike[str]], *, by: str, since: str | None, until: str | None, timezone_name: str | None,
           prices_file: str | os.PathLike[str] | None, jobs: int | None, use_cache: bool, progress: Progress | None, strict: bool,
           render: Render | None = None, engine: Any = None, allow_empty: bool = False,
           sources: list[tuple[str, str]] | None = None) -> tuple[Ledger, Scan]:
    """`usage` for files on disk; `strict` checks every line of every log, each catty log first and whole
    (see `filescan.validate_catty_logs`), and reads past both caches."""
    if by not in BY_CHOICES:
        raise UsageError(f"--by must be one of {', '.join(BY_CHOICES)}")
    lo, hi = days_asked(since, until)
    prices = price_files(prices_file)
    # Strict reads every line: no cache knows them. A URL's files have no inode, and some stores no mtime: not cached.
    use_cache = use_cache and not strict and not any(is_url(p) for p in paths)
    answers_file = answers_path(paths)
    walked = taken(paths) if use_cache else None  # (the entry point's lookup read and walked them just now)
    cached = walked[0] if walked is not None else read_answers(answers_file) if use_cache else {}
    answers = cached.get("answers")
    if type(answers) is not dict:
        answers = {}
    listings = walked[1] if walked is not None else Listings(cached.get("dirs"))
    ran = None
    since_at = since_ns = None
    if lo is not None:  # "Since yesterday": a log last written before that day began holds no call of it.
        from .times import day_start, timezone_named

        since_at = day_start(lo, timezone_named(timezone_name))
        since_ns = int(since_at * 1e9)  # (as `filescan.scan` takes it)
    if not strict and engine is None and not cached and _cold(paths, answers_file, use_cache):
        from .fanout import survey_and_scan
        from .library import ahead

        # (the price table the ledger needs afterwards is loaded while the workers parse)
        fanned = survey_and_scan([os.fspath(p) for p in paths], listings, jobs, progress, since_ns, ahead)
        if fanned is not None:
            found, ran = fanned
    if walked is not None:
        found = walked[2]
    elif ran is None:
        found = survey(paths, listings)
    # A PATH holding nothing is refused once the others are read too: the most severe refusal of all stands.
    empty = refused_empty(found, sources, allow_empty)
    if strict:
        from .filescan import validate_catty_logs

        validate_catty_logs(found)
    key = ""
    asked = question(by, timezone_name, lo, hi, prices, allow_empty, sources)
    # Blocks say what runs now (active, projection) and fold all calls at once: neither an answer nor a fold is kept.
    keep_answers = use_cache and by != "block"
    if keep_answers and not empty:
        # An answer is stored only after the question was checked in full (time zone, price table), so a hit needs no checks.
        key = query_key(found, asked)
        hit = answers.get(key)
        if hit is not None:
            scan_info = Scan(files=hit["files"], bad_lines=hit["bad_lines"], bad_samples=list(hit["bad_samples"]))
            return Ledger(**{**hit["ledger"], "rendered": hit.get("rendered")}), scan_info
    # What an answer from the cache does without: the fold, the dedupe, the prices, the time zones.
    from .copies import dedupe
    from .ledger import fold_calls, ledger_of
    from .prices import load_prices
    from .times import timezone_named

    tz = timezone_named(timezone_name)
    table = load_prices(prices_file, prices)
    got = None
    if keep_answers and lo is None and ran is None and not empty:  # (with --since the files read depend on the day: always the full run)
        from .kept import adjusted

        got = adjusted(answers_file, asked, found, by=by, tz=tz, until=hi, prices=table)
    if got is not None:
        ledger, result = got
        ledger = ledger.with_sources(_named(sources))
    else:
        from .filescan import scan

        result = scan(found, jobs=jobs, use_cache=use_cache, progress=progress, strict=strict,
                      modified_since=since_at, engine=engine, write_behind=True, ran=ran)
        if sources is None:
            refusals = [r for (arg, _files), logs in zip(found, result.logs) if (r := _refusal(arg, logs, result.not_logs, allow_empty))]
            if refusals:
                result.settle()
                refusal = strict_refusal(result) if strict else None
                raise _most_severe([*refusals, *([refusal] if refusal else [])])
        try:
            kept = dedupe(result.records)
            folded = fold_calls(kept, by=by, tz=tz, since=lo, until=hi, running=result.running)
        finally:
            result.settle()  # (the per-file caches a thread wrote meanwhile)
        # The workers already collapsed each file's own copies: those count as duplicates too.
        ledger = ledger_of(folded, by=by, prices=table, calls_read=result.calls_read, duplicates=result.calls_read - len(kept))
        ledger = ledger.with_sources(_named(sources))
        # Compressed logs left unread for want of the zstd program are read once it is installed:
        # neither this answer nor this fold is kept (they would stand for the unchanged files).
        use_cache = use_cache and not _zstd_missing(found)
        # (an empty PATH is asked again in full: see _refusal; a cold run keeps no fold: see `kept.keep`)
        if keep_answers and use_cache and lo is None and all(result.logs) and result.from_cache:
            from .kept import keep

            warning = keep(answers_file, asked, found, result, folded, kept)
            if warning:
                result.warnings.append(warning)
    if keep_answers and use_cache:
        as_hit = Scan(files=result.files, bad_lines=result.bad_lines, bad_samples=result.bad_samples)
        answers.pop(key, None)
        answers[key] = {"ledger": ledger.kept(), "files": result.files,
                        "bad_lines": result.bad_lines, "bad_samples": result.bad_samples,
                        "rendered": render(ledger, as_hit) if render is not None else None}
        try:
            write_answers(answers_file, answers, listings.seen)
        except Exception as exc:
            result.warnings.append(f"usage answer cache not written: {exc}")
    return ledger, result


def _cold(paths: Sequence[str | os.PathLike[str]], answers_file: str, use_cache: bool) -> bool:
    """Whether nothing of PATHS is cached (or the caches are not read): no answer, no kept fold, no
    per-file cache; then every log is read, and the workers can walk the trees too (see `fanout`)."""
    if any(is_url(p) for p in paths):
        return False
    if not use_cache:
        return True
    return not any(os.path.exists(f) for f in (answers_file, index_file(answers_file), *(cache_file("usage", os.path.abspath(os.fspath(p)))
                                                                                           for p in paths)))


def _named(sources: list[tuple[str, str]] | None) -> list[dict[str, str]] | None:
    """The homes read without a PATH, as the document names them (None: PATHs were named)."""
    return None if sources is None else [{"agent": agent, "path": folder} for agent, folder in sources]


def _zstd_missing(found: Survey) -> bool:
    """Whether FOUND holds compressed logs (`rollout-*.jsonl.zst`) and no zstd program reads them."""
    if not any(row[0].endswith(".zst") for _arg, files in found for row in files):
        return False
    return program() is None
