"""The PreCompact hook on a long Claude Code transcript: the first run (the mirror built from the
whole file) beside a later one (only the bytes appended since), as a ratio, with the bytes each
run read. Usage: python bench/hook_mirror.py [MEGABYTES] (default 50)."""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.pop(0)  # bench/inspect.py would shadow the stdlib
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from catty_ctx.agents.mirror import sync  # noqa: E402

SID = "bench-0000-4000-8000-000000000001"


def records(n: int, start: int = 0):
    parent = None
    for i in range(start, start + n):
        uid = f"u-{i:08d}"
        if i % 3 == 0:
            rec = {"type": "user", "message": {"role": "user", "content": f"Step {i}: keep going with the parser. " + "x" * 300}}
        elif i % 3 == 1:
            rec = {"type": "assistant", "requestId": f"req_{i}", "message": {
                "id": f"msg_{i}", "role": "assistant", "model": "claude-bench",
                "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": f"pytest -k case_{i}"}}],
                "usage": {"input_tokens": 1000, "output_tokens": 20}}}
        else:
            rec = {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i - 1}", "content": "ok\n" + "y" * 600, "is_error": False}]}}
        rec.update({"uuid": uid, "parentUuid": parent, "sessionId": SID, "timestamp": "2026-12-01T10:00:00Z", "cwd": "/home/dev/p"})
        parent = uid
        yield json.dumps(rec) + "\n"


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 50.0
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(tmp) / f"{SID}.jsonl"
        n = 0
        with open(transcript, "w") as f:
            while f.tell() < megabytes * (1 << 20):
                f.writelines(records(3000, n))
                n += 3000
        size = transcript.stat().st_size
        mirror = Path(tmp) / "mirror"
        t0 = time.perf_counter()
        first = sync(mirror, str(transcript), "claude", SID, archive=True)
        cold = time.perf_counter() - t0
        with open(transcript, "a") as f:
            f.writelines(records(30, n))
        t0 = time.perf_counter()
        second = sync(mirror, str(transcript), "claude", SID, archive=True)
        warm = time.perf_counter() - t0
        appended = transcript.stat().st_size - size
    print(f"transcript: {size / (1 << 20):.1f} MiB; first run read {first.bytes_read} bytes, appended {first.appended} events, "
          f"{cold:.2f} s")
    print(f"second run: {appended} bytes appended, read {second.bytes_read} bytes ({second.bytes_read / size:.5f} of the file), "
          f"appended {second.appended} events, {warm:.3f} s")
    print(f"ratio second/first: {warm / cold:.4f}")
    print(f"(bytes read by the second run beyond the appended ones: {second.bytes_read - appended}, the fingerprint windows)")


if __name__ == "__main__":
    main()
