"""Regenerate the screenshots in docs/ from the demo session's report (needs chromium).

    python docs/screenshots.py

Writes docs/report-demo.png (1280 px wide) and docs/report-demo-narrow.png (390 px, a
phone's width) from `catty-ctx report fixtures/sessions/demo` (a session using about 1 % of its
window), and docs/report-compacted.png from a copy of it grown to its threshold and compacted
twice, all drawn by headless Chromium.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOTS = [("demo", "report-demo.png", 1280, 1400), ("demo", "report-demo-narrow.png", 390, 1400), ("compacted", "report-compacted.png", 1280, 1080)]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def main() -> int:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        pages = {"demo": Path(tmp) / "demo.html", "compacted": Path(tmp) / "compacted.html"}
        # Run from the source folder so the page names the session as the README does.
        subprocess.run([sys.executable, "-m", "catty_ctx", "report", "fixtures/sessions/demo", "-o", str(pages["demo"])], cwd=ROOT, check=True)
        grown = _compacted(Path(tmp) / "grown")
        subprocess.run([sys.executable, "-m", "catty_ctx", "report", grown.name, "-o", str(pages["compacted"])], cwd=grown.parent, check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        for which, name, width, height in SHOTS:
            with tempfile.TemporaryDirectory() as profile:
                subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                                f"--screenshot={ROOT / 'docs' / name}", pages[which].as_uri()], check=True, capture_output=True)
            print(f"wrote docs/{name}")
    return 0


def _compacted(dest: Path) -> Path:
    """The demo session on a 20,000-token window, grown turn by turn (a provider usage report
    each) past its threshold and compacted twice on the way."""
    import orjson

    shutil.copytree(ROOT / "fixtures" / "sessions" / "demo", dest)
    run = [sys.executable, "-m", "catty_ctx"]
    context = 2_500
    for turn in range(1, 25):
        context += 900 + 40 * turn
        cached = int(context * 0.8)
        events = [{"kind": "message", "id": f"g{turn}", "role": "user", "text": f"step {turn}: keep going " + "x" * 200},
                  {"kind": "message", "id": f"h{turn}", "role": "assistant", "text": f"done with step {turn} " + "y" * 2000},
                  {"kind": "usage", "model": "demo-model-1", "input": context - cached, "output": 400, "cache_read": cached,
                   "cache_write": 0, "reasoning": 0}]
        subprocess.run([*run, "append", str(dest), "-q"], input=b"".join(orjson.dumps(e) + b"\n" for e in events), check=True)
        if context >= 17_000:  # 85 % of the window it is given below
            subprocess.run([*run, "compact", str(dest), "--force"], check=True, capture_output=True)
            context = 4_000
    summary = orjson.loads((dest / "summary.json").read_bytes())
    (dest / "summary.json").write_bytes(orjson.dumps({**summary, "window": 20_000}))
    return dest


if __name__ == "__main__":
    sys.exit(main())
