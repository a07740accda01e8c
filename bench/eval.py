"""Benchmark: `catty-ctx eval` over 20 generated sessions x 3 compactions x 2 summarisers.

The summarisers are `extractive` and a `cmd:` stand-in for a local model (a small script that
answers with the start of its prompt's conversation, as long as a real summary). Prints the
wall time of the whole eval as a process (target: under 2 minutes here), the time per
compaction, and the ratio of `--jobs 2` to the serial run (the baseline).

    python bench/eval.py [--sessions 20] [--kb 150] [--compactions 3]
"""
from __future__ import annotations

import sys

sys.path.pop(0)  # this folder's inspect.py would shadow the stdlib's

import argparse  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

from _util import catty, env_with_project, run  # noqa: E402
from make_session import build  # noqa: E402

TARGET_S = 120.0
MODEL = """import sys
text = sys.stdin.read()
body = text.split("<conversation>", 1)[-1]
print("<summary>" + body[:3000] + "</summary>")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--kb", type=int, default=150, help="size of each generated session")
    ap.add_argument("--compactions", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-eval-"))
    try:
        corpus = tmp / "corpus"
        for i in range(a.sessions):
            build(corpus / f"s{i:02d}", a.kb * 1024, seed=i)
        model = tmp / "model.py"
        model.write_text(MODEL)
        env = env_with_project(CATTY_CTX_RETRY_BACKOFF="0")
        args = [*catty(), "eval", str(corpus), "--summarizer", "extractive", "--summarizer", f"cmd:{sys.executable} {model}",
                "--compactions", str(a.compactions), "--json"]
        compactions = a.sessions * a.compactions * 2
        print(f"corpus: {a.sessions} sessions of {a.kb} KB, {a.compactions} compactions each, 2 summarisers ({compactions} compactions)")
        print(f"{'jobs':>4} {'wall s':>8} {'ms/compaction':>14} {'vs jobs 1':>10} {'/ 2 min':>8}")
        base = None
        for jobs in (1, 2):
            out = tmp / f"report-{jobs}.json"
            with open(out, "wb") as f:
                wall, _, rc = run([*args, "--jobs", str(jobs)], stdout=f.fileno(), env=env)
            if rc != 0:
                sys.exit(f"eval failed ({rc})")
            base = base or wall
            print(f"{jobs:>4} {wall:>8.1f} {wall * 1000 / compactions:>14.1f} {wall / base:>10.2f} {wall / TARGET_S:>8.2f}")
        report = orjson.loads((tmp / "report-1.json").read_bytes())
        for r in report["runs"]:
            m = r["metrics"]
            name = "cmd:model.py" if r["summarizer"].startswith("cmd:") else r["summarizer"]
            print(f"  {name} x {r['mode']}: facts {r['facts']}, state {m['state_recall']}, instr {m['instruction_retention']}, "
                  f"detail {m['detail_recovery']}, summariser {m['summarizer_seconds']} s, cached {m['cached_input_ratio']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
