"""The ledger kept between runs: when logs only grew, their new calls are added to the last fold.

A full run folds every call again (dedupe across files, then the buckets of `ledger.fold_calls`).
After a line is appended to one log that is most of the work, so a run keeps, beside the
per-file caches:

- the *fold* of each of the last FOLDS_KEPT questions (its buckets, and the generations of the
  per-file caches it was made from);
- the *index* of those caches: a 64-bit hash of every uuid and message id of their calls, and
  of the dedupe keys that hold neither (a Claude Code key is made of them), sorted; with the
  survey of the logs they were made from and the counts the document reports;
- the *calls* of those caches, deduped (MessagePack, written with the index): a question not
  asked before about the same logs is their fold, not a decode of every cached entry, a dedupe
  and a fold (on a thousand-log tree a new `--by` costs a third of what it did).

When the per-file caches are still of the fold's generations and every log only grew (or is
new), only the appended bytes are read (`filescan.grown`). Their calls can be added to the
buckets as they are when none of them can meet an earlier call under the dedupe rules: no key,
uuid or message id in the index (so no copy, replay or side-question re-log of an earlier call;
a hash collision only sends the question to the full run), no catty fork copy (traced across
sessions), no reported cost (those are summed in call order), no incomplete session. Anything
else is answered by the full run, which writes both again. A cold run (no per-file cache yet)
writes neither: the first run after it that reads a cache does, so a cold scan pays nothing.
"""
from __future__ import annotations

from . import decoder  # noqa: F401  # (first: msgspec without typing_extensions, see decoder)

# isort: split

import marshal
from array import array
from bisect import bisect_left

import msgspec
from xxhash import xxh3_64_intdigest as h

from .cachefiles import cache_file, index_file, read_bytes, write_cache_file
from .copies import dedupe
from .filescan import grown
from .ledger import fold_calls, ledger_of
from .outcome import Scan
from .records import DECODE_CALLS, ENCODE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import tzinfo
    from typing import Any

    from .filescan import Scan
    from .ledger import Folded, Ledger
    from .prices import Prices
    from .records import Record
    from .walk import Survey


FOLDS_KEPT = 16  # questions whose fold is kept per list of PATHs (the most recently asked)


def _files(paths_key: str) -> tuple[str, str]:
    return index_file(paths_key), cache_file("usage-folds", paths_key)


def _write_calls(paths_key: str, gens: list[int], kept: list[Record]) -> None:
    write_cache_file(cache_file("usage-calls", paths_key), ENCODE((gens, kept)))


def _read_calls(paths_key: str, gens: list[int]) -> list[Record] | None:
    """The deduped calls kept with the index of GENS; None when missing, of other caches, or unreadable."""
    data = read_bytes(cache_file("usage-calls", paths_key))
    if data is None:
        return None

    try:
        got_gens, calls = DECODE_CALLS(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return calls if got_gens == gens else None


def _load(path: str) -> Any:
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None


def _folds(path: str) -> dict[str, Any]:
    folds = _load(path)
    return folds if type(folds) is dict else {}


def _put_fold(folds: dict[str, Any], question: tuple[Any, ...], gens: list[int], folded: Folded) -> bytes:
    key = repr(question)
    folds.pop(key, None)
    folds[key] = {"gens": gens, "folded": folded}
    while len(folds) > FOLDS_KEPT:
        folds.pop(next(iter(folds)))
    return marshal.dumps(folds)


def _hashes(records: list[Record]) -> list[int]:
    """What the index holds of RECORDS (uuids, message ids, other keys apart by seed)."""
    out = []
    for r in records:
        if r.uuid is not None:
            out.append(h(r.uuid.encode("utf-8", "surrogatepass"), 1))
        if r.msg_id is not None:
            out.append(h(r.msg_id.encode("utf-8", "surrogatepass"), 2))
        elif r.key is not None and r.key[:2] != "u\0":  # (a Claude Code key is its message id's, or its uuid's)
            out.append(h(r.key.encode("utf-8", "surrogatepass"), 3))
    return out


def _meets(index: array[int], records: list[Record]) -> bool:
    """Whether a record could be a copy of an indexed call: a uuid, message id or key in INDEX."""
    n = len(index)
    for x in _hashes(records):
        i = bisect_left(index, x)
        if i < n and index[i] == x:
            return True
    return False


def keep(paths_key: str, question: tuple[Any, ...], found: Survey, result: Scan, folded: Folded, kept: list[Record]) -> str | None:
    """After a full run over FOUND: write the fold of QUESTION and, when the per-file caches are
    of a new generation, their index (with what the run read: the survey, the counts of calls
    and bad lines) and their calls KEPT by the dedupe. A warning when they could not be written
    (costs speed, never a result)."""
    gens = result.generations
    if not gens or 0 in gens or not result.from_cache:
        return None  # (no per-file cache to extend, or a cold run: see above)
    index_file, folds_file = _files(paths_key)
    try:
        old = _load(index_file)
        if type(old) is not dict or old.get("gens") != gens:
            _write_calls(paths_key, gens, kept)  # (first: an index never names calls not written)
            write_cache_file(index_file, marshal.dumps({
                "gens": gens, "found": found, "hashes": array("Q", sorted(set(_hashes(result.records)))).tobytes(),
                "calls_read": result.calls_read, "kept": len(kept), "files": result.files, "bad_lines": result.bad_lines,
                "bad_samples": result.bad_samples, "calls_gens": gens, "running": result.running}))
        elif old.get("calls_gens") != gens:  # (an index a run after an append extended: its calls are behind)
            _write_calls(paths_key, gens, kept)
            old["calls_gens"] = gens
            write_cache_file(index_file, marshal.dumps(old))
        write_cache_file(folds_file, _put_fold(_folds(folds_file), question, gens, folded))
    except Exception as exc:
        return f"usage ledger cache not written: {exc}"
    return None


def adjusted(paths_key: str, question: tuple[Any, ...], found: Survey, *, by: str, tz: tzinfo | None, until: str | None,
             prices: Prices) -> tuple[Ledger, Scan] | None:
    """The ledger of QUESTION from its kept fold (or, asked first, the fold of the kept calls)
    and the calls appended since; None when the full run must answer (nothing kept of these
    logs, logs changed otherwise, or a new call meets an earlier one)."""
    index_file, folds_file = _files(paths_key)
    folds = _folds(folds_file)
    fold = folds.get(repr(question))
    index = _load(index_file)
    if type(index) is not dict or type(index.get("found")) is not list:
        return None
    if type(fold) is not dict:
        calls = _read_calls(paths_key, index["gens"]) if index.get("calls_gens") == index.get("gens") else None
        if calls is None:
            return None

        fold = {"gens": index["gens"], "folded": fold_calls(calls, by=by, tz=tz, until=until, running=index.get("running", ()))}
    if index.get("gens") != fold.get("gens"):
        return None
    hashes = array("Q")
    try:
        hashes.frombytes(index["hashes"])
    except (KeyError, TypeError, ValueError):
        return None

    growth = grown(found, index["gens"], index["found"])
    if growth is None:
        return None
    folded = fold["folded"]
    incomplete = set(folded["incomplete_sessions"])
    for r in growth.records:
        if (r.key is not None and r.key[:2] == "e\0") or r.cost is not None or r.incomplete or r.session in incomplete:
            return None  # (the per-file caches were rewritten: the full run reads them as they are now)
    if _meets(hashes, growth.records):
        return None

    new = dedupe(growth.records)
    fold_calls(new, by=by, tz=tz, until=until, into=folded)
    calls_read = index["calls_read"] + growth.calls_read
    kept_calls = index["kept"] + len(new)
    ledger = ledger_of(folded, by=by, prices=prices, calls_read=calls_read, duplicates=calls_read - kept_calls)
    result = Scan(files=growth.files, files_parsed=growth.files_parsed, bytes_parsed=growth.bytes_parsed, bad_lines=index["bad_lines"],
                  bad_samples=list(index["bad_samples"]), warnings=growth.warnings, calls_read=calls_read)
    result.generations = growth.generations
    try:
        if growth.generations != index["gens"]:
            added = _hashes(growth.records)
            if len(added) > 64:
                hashes = array("Q", sorted(set(hashes).union(added)))
            else:
                for x in added:
                    i = bisect_left(hashes, x)
                    if i == len(hashes) or hashes[i] != x:
                        hashes.insert(i, x)
            index.update(gens=growth.generations, found=found, hashes=hashes.tobytes(), calls_read=calls_read, kept=kept_calls,
                         files=growth.files)
            write_cache_file(index_file, marshal.dumps(index))
        write_cache_file(folds_file, _put_fold(folds, question, growth.generations, folded))
    except Exception as exc:
        result.warnings.append(f"usage ledger cache not written: {exc}")
    return ledger, result
