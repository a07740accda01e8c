"""Externalised payloads: the cost of folding a session whose large inputs stay inline
versus one whose large inputs moved to blobs/ (previews inline), and the cost of writing them.

    python bench/blobs.py [--turns N]

Prints log bytes, view tokens, fold time and append time, each as a ratio against the
inline baseline.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The project (uninstalled) instead of bench/, whose inspect.py would shadow the stdlib module.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from catty_ctx.session.blobs import externalize  # noqa: E402
from catty_ctx.session.create import create_session  # noqa: E402
from catty_ctx.view.fold import ViewStats, stream_view  # noqa: E402


def _turns(n: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for t in range(n):
        pasted = "".join(f"{t}:{i} a pasted log line with some words in it\n" for i in range(20_000))
        events.append({"kind": "message", "id": f"u{t}", "role": "user", "text": pasted + f"question {t}?"})
        events.append({"kind": "message", "id": f"a{t}", "role": "assistant", "text": "looking"})
        events.append({"kind": "tool_call", "call_id": f"c{t}", "name": "sh", "args": {"cmd": "cat big"}})
        events.append({"kind": "tool_result", "call_id": f"c{t}", "output": "row\n" * 50_000, "is_error": False})
    return events


def _build(root: Path, name: str, events: list[dict[str, Any]], *, external: bool) -> tuple[Path, float]:
    s = create_session(root / name)
    t0 = time.perf_counter()
    if external:
        events = [externalize(ev, s.directory) for ev in events]
    s.append(events)
    return s.log_path.parent, time.perf_counter() - t0


def _fold(path: Path, repeat: int = 3) -> tuple[float, int]:
    best = float("inf")
    tokens = 0
    for _ in range(repeat):
        stats = ViewStats()
        t0 = time.perf_counter()
        for _vi in stream_view(path, stats=stats):
            pass
        best = min(best, time.perf_counter() - t0)
        tokens = stats.tokens
    return best, tokens


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20)
    n = ap.parse_args().turns
    events = _turns(n)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inline, w_inline = _build(root, "inline", events, external=False)
        blobs, w_blobs = _build(root, "blobs", events, external=True)
        f_inline, tok_inline = _fold(inline)
        f_blobs, tok_blobs = _fold(blobs)
        size_inline = (inline / "updates.jsonl").stat().st_size
        size_blobs = (blobs / "updates.jsonl").stat().st_size
        stored = sum(p.stat().st_size for p in (blobs / "blobs").iterdir())
    print(f"{n} turns, each a {len(events[0]['text']):,}-byte user message and a {len(events[3]['output']):,}-byte tool output")
    print(f"log bytes      inline {size_inline:>12,}  externalised {size_blobs:>10,}  ratio {size_inline / size_blobs:6.1f}x  (blobs/ holds {stored:,})")
    print(f"view tokens    inline {tok_inline:>12,}  externalised {tok_blobs:>10,}  ratio {tok_inline / tok_blobs:6.1f}x")
    print(f"fold (view)    inline {f_inline * 1e3:>10.1f}ms  externalised {f_blobs * 1e3:>8.1f}ms  ratio {f_inline / f_blobs:6.1f}x faster")
    print(f"append         inline {w_inline * 1e3:>10.1f}ms  externalised {w_blobs * 1e3:>8.1f}ms  ratio {w_blobs / w_inline:6.2f}x the inline cost")


if __name__ == "__main__":
    main()
