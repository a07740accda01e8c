"""Concurrent writers on one session: 4 appenders and 3 compactions at once lose nothing,
duplicate nothing and keep seq contiguous; a writer that cannot get the lock gives up with
exit 75 once its --lock-timeout has passed. Real processes, real files."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from catty_ctx.session.store import Session
from catty_ctx.session.create import create_session
from support import cli
from test_crash import ENV

WRITERS = 4
COMPACTIONS = 3

# One appender: at least EACH events in batches of 1-8, one Session.append (one lock) per
# batch, so the writers and the compactions interleave line by line. It goes on until the test
# drops a stop file (or a hard cap of 50,000), so every compaction runs while all writers are
# still writing, however slowly the machine schedules them; it prints how many events it wrote.
_APPENDER = """
import os, random, sys
from catty_ctx.session.store import Session
w, each, path, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(w)
s = Session.open(path)
i = 0
while i < 50_000 and (i < each or not os.path.exists(stop)):
    n = rng.randint(1, 8)
    s.append([{"kind": "message", "id": f"w{w}-{j}", "role": "user" if j % 2 else "assistant", "text": f"writer {w} event {j}"}
              for j in range(i, i + n)], warn=None)
    i += n
print(i)
"""


def test_four_appenders_and_three_compactions_lose_nothing(tmp_path: Path) -> None:
    _appenders_and_compactions(tmp_path, 500)


@pytest.mark.slow
def test_four_appenders_of_2500_events_and_three_compactions_lose_nothing(tmp_path: Path) -> None:
    _appenders_and_compactions(tmp_path, 2500)


def _appenders_and_compactions(tmp_path: Path, each: int) -> None:
    """WRITERS appenders of at least EACH events each and COMPACTIONS compactions at once."""
    session = tmp_path / "s"
    create_session(session, session_id="busy")
    stop = tmp_path / "stop"
    writers = [
        subprocess.Popen([sys.executable, "-c", _APPENDER, str(w), str(each), str(session), str(stop)],
                         env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for w in range(WRITERS)
    ]
    overlapped = 0
    for k in range(COMPACTIONS):
        # Wait until the log has grown past the next mark, so each compaction has new events
        # to fold and runs while the writers are still going.
        mark = (k + 1) * WRITERS * each // (COMPACTIONS + 2)
        deadline = time.monotonic() + 60
        while Session.open(session).next_seq() < mark and time.monotonic() < deadline:
            time.sleep(0.01)
        # Each compaction waits for events appended after the last one, so it has new ones to fold.
        last = max((e["seq"] for e in Session.open(session).events() if e["kind"] == "compaction"), default=-1)
        while Session.open(session).next_seq() <= last + 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc = cli("compact", str(session), "--force", "--json", "--lock-timeout", "60")
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
        assert orjson.loads(proc.stdout)["status"] == "compacted"
        overlapped += any(w.poll() is None for w in writers)
    stop.touch()
    written = []
    for w in writers:
        out, err = w.communicate(timeout=120)
        assert w.returncode == 0 and err == b"", err.decode()
        written.append(int(out))
    assert overlapped == COMPACTIONS  # every compaction really ran beside the appenders

    data = (session / "updates.jsonl").read_bytes()
    assert data.endswith(b"\n")
    events = list(Session.open(session).events())
    assert [e["seq"] for e in events] == list(range(len(events)))
    ids = [e["id"] for e in events if e["kind"] == "message" and e["id"].startswith("w")]
    assert len(ids) == len(set(ids)) == sum(written)  # every event present, once
    for w in range(WRITERS):  # and each writer's in its own order
        mine = [int(i.split("-")[1]) for i in ids if i.startswith(f"w{w}-")]
        assert written[w] >= each and mine == list(range(written[w]))
    compactions = [e for e in events if e["kind"] == "compaction"]
    assert len(compactions) == COMPACTIONS
    assert sum(1 for e in events if e["kind"] == "message" and e["seq"] > compactions[0]["seq"]) > 0
    assert len(list((session / "compaction_requests").glob("*.json"))) == COMPACTIONS
    summary = orjson.loads((session / "summary.json").read_bytes())
    assert summary["last_seq"] == events[-1]["seq"] and summary["log_size"] == len(data)
    assert cli("repair", str(session), "--check").returncode == 0


@pytest.mark.parametrize(
    "command",
    [
        ["append", "{s}", "-q"],
        ["compact", "{s}", "--force"],
        ["repair", "{s}"],
        ["instructions", "{d}", "--append", "{s}", "--no-global"],
    ],
    ids=lambda c: c[0],
)
def test_a_writer_gives_up_with_exit_75_when_the_lock_timeout_passes(tmp_path: Path, command: list[str]) -> None:
    session = tmp_path / "s"
    s = create_session(session, session_id="held")
    s.append([{"kind": "message", "id": "u", "role": "user", "text": "hi"}, {"kind": "message", "id": "a", "role": "assistant", "text": "yo"}])
    if command[0] == "repair":  # something to repair, so repair needs the lock
        (session / "summary.json").unlink()
    (tmp_path / "AGENTS.md").write_text("Be brief.\n")
    before = (session / "updates.jsonl").read_bytes()
    stdin = b'{"kind":"message","id":"late","role":"user","text":"late"}\n'
    with s.lock():
        started = time.monotonic()
        proc = cli(*[p.format(s=session, d=tmp_path) for p in command], "--lock-timeout", "0.5", input=stdin)
        took = time.monotonic() - started
    err = proc.stderr.decode()
    assert proc.returncode == 75, err
    assert 0.5 <= took < 10  # it waited for the timeout, and not much more
    assert err.count("\n") == 1 and "locked by another writer" in err and "Traceback" not in err
    assert (session / "updates.jsonl").read_bytes() == before
