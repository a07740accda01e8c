"""kill -9 during compaction, many times: the log before is always a byte-identical prefix,
the session loads, and no artifact or segment is ever half-written. Real processes."""
from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from catty_ctx.compact.artifacts import load_artifact
from catty_ctx.session.segments import list_segments
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import FIXTURES, ROOT
from test_crash import check_after_crash


def _big_demo(tmp_path: Path) -> Path:
    s = tmp_path / "base"
    shutil.copytree(FIXTURES / "sessions" / "demo", s)
    Session.open(s).append([{"kind": "message", "id": f"f{i}", "role": "user", "text": f"filler {i} " + "z" * 300} for i in range(12000)])
    return s


def _compact(session: Path, mode: str) -> subprocess.Popen[bytes]:
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from catty_ctx.compact.pipeline import compact_session; "
            f"from catty_ctx.session.store import Session; compact_session(Session.open({str(session)!r}), force=True, mode={mode!r})")
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.slow
def test_kill_during_compaction_40_trials(tmp_path: Path) -> None:
    base = _big_demo(tmp_path)
    t0 = time.monotonic()
    trial = tmp_path / "timing"
    shutil.copytree(base, trial)
    _compact(trial, "summary").wait()
    whole = time.monotonic() - t0
    rng = random.Random(11)
    killed = 0
    for i in range(40):
        s = tmp_path / f"t{i}"
        shutil.copytree(base, s)
        before = (s / "updates.jsonl").read_bytes()
        proc = _compact(s, ("summary", "segments", "transcript")[i % 3])
        time.sleep(rng.uniform(0.05, whole))
        proc.send_signal(signal.SIGKILL)
        killed += proc.wait() == -signal.SIGKILL
        check_after_crash(s, before)
        assert view(s)
        for artifact in (s / "compaction_requests").glob("*.json") if (s / "compaction_requests").is_dir() else ():
            load_artifact(artifact)
        for row in list_segments(s):
            assert (s / "segments" / row["file"]).is_file()
        orjson.loads((s / "summary.json").read_bytes())
    assert killed >= 15  # the kills really land while compaction runs
