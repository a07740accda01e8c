"""Measure: `catty-ctx eval --native` on a generated corpus of Claude Code and Codex sessions
whose own compaction summaries drop planted facts (todos, files edited, the user's constraint,
the exact error). Prints the recall of the agents' summaries alone and with our reminder, in
total and by kind (the figure docs/agents.md and docs/eval.md show).

    python bench/eval_native.py [--sessions 12] [--seed 7] [--keep 0.3]
"""
from __future__ import annotations

import sys

sys.path.pop(0)  # this folder's inspect.py would shadow the stdlib

import argparse  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent / "tests"))  # the corpus generator the tests use

from _util import catty, env_with_project, run  # noqa: E402
from support.native_corpus import write_corpus  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=12)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", type=float, default=0.3, help="chance that a summary keeps each planted fact")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-eval-native-"))
    try:
        sessions = write_corpus(tmp / "home", sessions=a.sessions, seed=a.seed, keep=a.keep)
        out = tmp / "report.json"
        with open(out, "wb") as f:
            wall, _, rc = run([*catty(), "eval", "--native", str(tmp / "home"), "--json"], stdout=f.fileno(), env=env_with_project())
        if rc != 0:
            sys.exit(f"eval --native failed ({rc})")
        t = orjson.loads(out.read_bytes())["native"]["total"]
        agents = {s.agent for s in sessions}
        print(f"corpus: {a.sessions} sessions ({', '.join(sorted(agents))}), {t['compactions']} compactions, {t['facts']} facts "
              f"(summaries keep each planted fact with chance {a.keep}); {wall:.1f} s")
        print(f"recall: summary alone {t['summary_recall']}, with our reminder {t['reminder_recall']}")
        for kind, v in t["by_kind"].items():
            if v["facts"]:
                print(f"  {kind:<12} {v['facts']:>4} facts: summary {v['summary'] / v['facts']:.2f}, with reminder {v['reminder'] / v['facts']:.2f}")
        print(f"  details found through the mirror the reminder names: {t['recovered']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
