"""Hostile files around a session: a log, summary, segment or blob that cannot be read, a folder
that cannot be written, a log whose last line is not an event. Each gets one stderr line naming
the file and its documented exit code, never an internal error, and nothing is written.

The real program runs in a process of its own, forked from one that imported the libraries
(tests/support/forked_cli.py). A file's mode only bites a process without the root's override, so as
root the forking process is started with that capability dropped (setpriv), and every run
forked from it lacks it too.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from support import forked_cli
import pytest
from support import FIXTURES, ROOT

ERROR = "catty-ctx: error: "


@functools.cache
def _unprivileged() -> list[str]:
    """The prefix that runs a command which cannot read or write past a file's mode."""
    if os.geteuid() != 0:
        return []
    prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    if shutil.which("setpriv") is None or subprocess.run([*prefix, "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("running as root, and setpriv cannot drop the override of file modes here")
    return prefix


def run(*args: str, cwd: Path, input: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*forked_cli.command(forked_cli.LIBRARIES, under=_unprivileged()), *args], input=input, capture_output=True,
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, check=False)


def tree(path: Path) -> dict[str, str]:
    """Every entry under PATH with its content's digest: any write, new file or removal shows
    (the lock file aside: a writer leaves it, empty, as every writer does)."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.name.endswith(".lock"):
            continue
        key = str(p.relative_to(path))
        out[key] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "other"
    return out


def one_error(proc: subprocess.CompletedProcess[bytes], code: int) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), err
    return lines[0][len(ERROR):]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder holding a copy of the demo session as `sess`, and an empty `out`."""
    shutil.copytree(FIXTURES / "sessions" / "demo", tmp_path / "sess")
    (tmp_path / "out").mkdir()
    return tmp_path


EVENT = b'{"kind":"message","id":"n1","role":"user","text":"more"}\n'

# -- a log that cannot be read ----------------------------------------------------------------

LOG_READERS = [
    ["inspect", "sess"],
    ["inspect", "sess/updates.jsonl", "--json"],
    ["prune", "sess"],
    ["resume", "sess", "--format", "openai"],
    ["repair", "sess", "--check"],
    ["repair", "sess"],
    ["compact", "sess", "--force"],
    ["fork", "sess", "out/child"],
    ["report", "sess"],
]


@pytest.mark.parametrize("args", LOG_READERS, ids=" ".join)
def test_an_unreadable_log_is_a_data_error_naming_it(work: Path, args: list[str]) -> None:
    log = work / "sess" / "updates.jsonl"
    log.chmod(0)
    before = tree(work)
    proc = run(*args, cwd=work, input=EVENT)
    assert one_error(proc, 65) == "sess/updates.jsonl: cannot read (Permission denied)"
    assert tree(work) == before


# -- a summary.json that cannot be read ---------------------------------------------------------

SUMMARY_READERS = [
    ["inspect", "sess", "--json"],
    ["inspect", "sess/updates.jsonl"],
    ["prune", "sess"],
    ["resume", "sess", "--format", "anthropic"],
    ["repair", "sess", "--check"],
    ["repair", "sess"],
    ["compact", "sess", "--force"],
    ["report", "sess"],
]


@pytest.mark.parametrize("args", SUMMARY_READERS, ids=" ".join)
def test_an_unreadable_summary_is_a_data_error_naming_it(work: Path, args: list[str]) -> None:
    (work / "sess" / "summary.json").chmod(0)
    before = tree(work)
    proc = run(*args, cwd=work, input=EVENT)
    assert one_error(proc, 65) == "sess/summary.json: cannot read (Permission denied)"
    assert tree(work) == before


# -- append: refused before a byte changes ------------------------------------------------------


def _summary_corrupt(sess: Path) -> None:
    (sess / "summary.json").write_bytes(b"{not json")


def _summary_unreadable(sess: Path) -> None:
    (sess / "summary.json").chmod(0)


def _summary_a_folder(sess: Path) -> None:
    (sess / "summary.json").unlink()
    (sess / "summary.json").mkdir()


def _folder_read_only(sess: Path) -> None:
    sess.chmod(0o555)


def _log_read_only(sess: Path) -> None:
    (sess / "updates.jsonl").chmod(0o444)


def _no_newline_anywhere(sess: Path) -> None:
    # CR line ends only: the whole log is one torn line, and no event can follow it.
    log = sess / "updates.jsonl"
    log.write_bytes(log.read_bytes().replace(b"\n", b"\r"))


def _last_seq_past_64_bits(sess: Path) -> None:
    with open(sess / "updates.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":99999999999999999999999,"ts":"2026-11-01T09:00:01.000Z","kind":"message","id":"x","role":"user","text":"a"}\n')


def _last_seq_a_string(sess: Path) -> None:
    with open(sess / "updates.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":"22","ts":"2026-11-01T09:00:01.000Z","kind":"message","id":"x","role":"user","text":"a"}\n')


def _binary_tail(sess: Path) -> None:
    # Junk holding newlines and ending without one: its last complete line is no event.
    with open(sess / "updates.jsonl", "ab") as f:
        f.write(bytes(range(256)) * 4)


# case: (damage, exit code, what the line starts with: the file, and for append what is wrong;
# `instructions --append` reads the whole log first, so it may name the line instead)
APPEND_REFUSALS = {
    "summary-corrupt": (_summary_corrupt, 65, "sess/summary.json: invalid JSON"),
    "summary-unreadable": (_summary_unreadable, 65, "sess/summary.json: cannot read (Permission denied)"),
    "summary-a-folder": (_summary_a_folder, 73, "sess/summary.json: cannot write (Is a directory)"),
    "folder-read-only": (_folder_read_only, 73, "sess/summary.json: cannot write (Permission denied)"),
    "log-read-only": (_log_read_only, 73, "sess/updates.jsonl: cannot append (Permission denied)"),
    "no-newline-anywhere": (_no_newline_anywhere, 65, "sess/updates.jsonl"),
    "last-seq-past-64-bits": (_last_seq_past_64_bits, 65, "sess/updates.jsonl"),
    "last-seq-a-string": (_last_seq_a_string, 65, "sess/updates.jsonl"),
    "binary-tail": (_binary_tail, 65, "sess/updates.jsonl"),
}
APPEND_SAYS = {
    "no-newline-anywhere": "event 1: the first event of a session must be its session event (use --create)",
    "last-seq-past-64-bits": "sess/updates.jsonl: last line is not a valid event; run 'catty-ctx repair'",
    "last-seq-a-string": "sess/updates.jsonl: last line is not a valid event; run 'catty-ctx repair'",
    "binary-tail": "sess/updates.jsonl: last line is not a valid event; run 'catty-ctx repair'",
}
WRITERS = [["append", "sess", "-q"], ["instructions", "out", "--no-global", "--append", "sess"]]


@pytest.mark.parametrize("args", WRITERS, ids=lambda a: a[0])
@pytest.mark.parametrize("case", sorted(APPEND_REFUSALS))
def test_an_append_that_cannot_finish_writes_nothing(work: Path, case: str, args: list[str]) -> None:
    damage, code, message = APPEND_REFUSALS[case]
    (work / "out" / "AGENTS.md").write_text("Run the tests.\n")
    (work / "sess" / "updates.jsonl.lock").touch()  # as any earlier writer left it
    damage(work / "sess")
    before = tree(work)
    proc = run(*args, cwd=work, input=EVENT)
    said = one_error(proc, code)
    if args[0] == "append" and case in APPEND_SAYS:
        assert said == APPEND_SAYS[case]
    else:
        assert said.startswith(message)
    assert tree(work) == before  # no event appended, no torn tail moved, no quarantine made


def test_fork_refuses_a_last_seq_past_64_bits(work: Path) -> None:
    _last_seq_past_64_bits(work / "sess")
    before = tree(work)
    proc = run("fork", "sess", "out/child", cwd=work)
    assert one_error(proc, 65).startswith("sess/updates.jsonl")
    assert tree(work) == before


# -- a segment that cannot be read --------------------------------------------------------------


@pytest.fixture
def archived(work: Path) -> Path:
    """`work` whose session has been compacted into segment 0."""
    proc = run("compact", "sess", "--force", "--mode", "segments", cwd=work)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (work / "sess" / "segments" / "segment_000.md").is_file()
    return work


@pytest.mark.parametrize("args", [["segment", "show", "sess", "0"], ["segment", "grep", "sess", "tests"]], ids=" ".join)
def test_an_unreadable_segment_is_a_data_error_naming_it(archived: Path, args: list[str]) -> None:
    (archived / "sess" / "segments" / "segment_000.md").chmod(0)
    before = tree(archived)
    proc = run(*args, cwd=archived)
    assert one_error(proc, 65) == "sess/segments/segment_000.md: cannot read (Permission denied)"
    assert proc.stdout == b""
    assert tree(archived) == before


# -- blobs/ that cannot be read -------------------------------------------------------------------


@pytest.fixture
def with_blob(work: Path) -> tuple[Path, str]:
    """`work` whose session holds a tool output moved to blobs/, and that blob's handle."""
    events = (b'{"kind":"tool_call","call_id":"big","name":"read","args":{}}\n'
              b'{"kind":"tool_result","call_id":"big","is_error":false,"output":"' + b"x" * 300_000 + b'"}\n')
    proc = run("append", "sess", "-q", cwd=work, input=events)
    assert proc.returncode == 0, proc.stderr.decode()
    (handle,) = [p.name for p in (work / "sess" / "blobs").iterdir()]
    return work, handle


def test_blobs_being_a_file_is_a_data_error_naming_it(with_blob: tuple[Path, str]) -> None:
    work, handle = with_blob
    blobs = work / "sess" / "blobs"
    shutil.rmtree(blobs)
    blobs.write_text("not a folder\n")
    before = tree(work)
    proc = run("blob", "sess", handle, cwd=work)
    assert one_error(proc, 65) == "sess/blobs is not a directory (a symbolic link is refused)"
    assert tree(work) == before


def test_eval_reports_an_unreadable_blob_as_that_session_s_bad_input(with_blob: tuple[Path, str]) -> None:
    work, handle = with_blob
    (work / "sess" / "blobs" / handle).chmod(0)
    before = tree(work)
    proc = run("eval", "sess", "--json", "--compactions", "1", cwd=work)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "Traceback" not in err and "internal error" not in err, err
    assert err.splitlines() == [f"catty-ctx: warning: extractive x segments: sess: sess/blobs/{handle}: cannot read (Permission denied)"]
    assert tree(work) == before


# -- usage over a deeply nested line ---------------------------------------------------------------

DEEP = b"[" * 100_000 + b"]" * 100_000
# A line of each format that can hold usage (it has the marker the scan looks for), nested
# 100,000 deep: past msgspec's depth limit, which it reports with a RecursionError.
DEEP_LINES = {
    "catty/updates.jsonl": b'{"v":1,"seq":0,"ts":"2026-11-01T00:00:00Z","kind":"session","session_id":"s"}\n'
    b'{"v":1,"seq":1,"ts":"2026-11-01T00:00:00Z","kind":"usage","model":"m","input":1,"output":1,"cache_read":0,'
    b'"cache_write":0,"reasoning":0,"x":' + DEEP + b"}\n",
    "codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-5f0c1c2a-0000-4000-8000-00000000c0de.jsonl":
    b'{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"token_count","info":' + DEEP + b"}}\n",
    "claude/projects/p/s.jsonl": b'{"type":"assistant","timestamp":"2026-01-01T00:00:00Z","message":{"model":"m",'
    b'"usage":{"input_tokens":1,"x":' + DEEP + b"}}}\n",
}


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
@pytest.mark.parametrize("name", sorted(DEEP_LINES), ids=lambda n: n.split("/")[0])
def test_usage_takes_a_line_nested_100000_deep_as_bad_json(tmp_path: Path, name: str, strict: bool) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True)
    path.write_bytes(DEEP_LINES[name])
    top = name.split("/")[0]
    before = tree(tmp_path)
    proc = run("usage", top, "--json", "--no-cache", *(["--strict"] if strict else []), cwd=tmp_path)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err
    if strict:
        lineno = DEEP_LINES[name].count(b"\n")  # the deep line is the last
        assert one_error(proc, 65).startswith(f"{path}:{lineno}: ")
    else:
        assert proc.returncode == 0, err
        assert b'"calls_read":0' in proc.stdout
    assert tree(tmp_path) == before


def test_usage_on_stdin_takes_a_line_nested_100000_deep_as_bad_json(tmp_path: Path) -> None:
    deep = b'{"kind":"x","a":' + DEEP + b"}\n"
    proc = run("usage", "-", "--json", cwd=tmp_path, input=deep)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    assert one_error(run("usage", "-", "--json", "--strict", cwd=tmp_path, input=deep), 65).endswith("not valid JSON; --strict refuses to skip them")
