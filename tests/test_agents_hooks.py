"""`hook claude pre-compact|session-start`: the mirror, the reminder, and the fail-open policy."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, cli

TRANSCRIPT = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"


@pytest.fixture
def mirrors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "mirrors"
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(root))
    return root


def _hook(name: str, payload: object) -> tuple[int, bytes, bytes]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    proc = cli("hook", "claude", name, input=data)
    return proc.returncode, proc.stdout, proc.stderr


def test_pre_compact_builds_the_mirror_and_session_start_prints_the_reminder(tmp_path: Path, mirrors: Path) -> None:
    t = tmp_path / "t.jsonl"
    shutil.copy(TRANSCRIPT, t)
    code, out, err = _hook("pre-compact", {"session_id": "sess-0001", "transcript_path": str(t), "hook_event_name": "PreCompact",
                                           "trigger": "auto", "cwd": str(tmp_path), "custom_instructions": ""})
    assert (code, out, err) == (0, b"", b"")
    mirror = mirrors / "claude" / "sess-0001"
    assert (mirror / "updates.jsonl").stat().st_size > 0
    code, out, err = _hook("session-start", {"session_id": "sess-0001", "source": "compact", "hook_event_name": "SessionStart"})
    assert code == 0 and err == b""
    doc = json.loads(out)
    context = doc["hookSpecificOutput"]["additionalContext"]
    assert doc["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "/home/dev/shop/cart.py" in context and len(context) <= 10_000
    assert context.rstrip().endswith(f"catty-ctx inspect {mirror} --seq N`.")
    for source in ("startup", "clear"):
        assert _hook("session-start", {"session_id": "sess-0001", "source": source}) == (0, b"", b"")
    # the transcript cut back to nothing: the mirror stays as it was
    before = (mirror / "updates.jsonl").read_bytes()
    t.write_bytes(b"")
    code, out, err = _hook("pre-compact", {"session_id": "sess-0001", "transcript_path": str(t)})
    assert code == 0 and err.count(b"\n") == 1
    assert (mirror / "updates.jsonl").read_bytes() == before
    t.unlink()
    assert _hook("pre-compact", {"session_id": "sess-0001", "transcript_path": str(t)})[0] == 0
    assert (mirror / "updates.jsonl").read_bytes() == before


@pytest.mark.parametrize("payload", [b"garbage", b"[1]", {"session_id": "../../etc", "transcript_path": "/x", "source": "compact"},
                                     {"session_id": "a/b", "source": "compact"}, {"transcript_path": "/x", "source": "compact"}])
def test_every_error_is_one_line_a_log_line_and_exit_0(mirrors: Path, payload: object) -> None:
    for name in ("pre-compact", "session-start"):
        code, out, err = _hook(name, payload)
        assert code == 0 and out == b"" and err.count(b"\n") == 1 and err.startswith(b"catty-ctx: warning: hook claude ")
    assert len((mirrors / "hooks.log").read_text().splitlines()) == 2
    assert not (mirrors / "claude").exists() or list((mirrors / "claude").iterdir()) == []
