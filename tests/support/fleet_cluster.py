"""A LocalCluster of 2 worker processes in a process of its own, for the fleet tests.

Run as a script: prints one JSON line {"address", "pids"} once the workers are up, then
answers commands read from stdin, one a line, with one JSON line each:
- `pids`: the worker processes now; `wait-workers`: the same once both are up again;
- `tasks`: the scheduler's count of task transitions so far (it grows when work ran there);
- `kill-busy`: wait until a worker has tasks in hand, SIGKILL its process (a real kill,
  mid-run), and say which pid and how many tasks it held.
EOF on stdin closes the cluster. The cluster lives outside the test process so that
process starts no Dask threads (which would stop the fork pools of other tests).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

# Dask's settings for a test cluster that idles between the tests' runs: no statistical
# profiler sampling every worker's threads, and the event-loop tick and system monitor at a
# slower pace (they only feed diagnostics), so an idle cluster costs the machine little CPU;
# and its worker processes (a restarted one too) forked from one process that imported Dask
# once (multiprocessing's forkserver), not each a fresh interpreter importing it.
QUIET = {
    "DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD": "forkserver",
    "DASK_LOGGING__DISTRIBUTED": "error",
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "5s",
}


def main() -> None:
    for name, value in QUIET.items():
        os.environ.setdefault(name, value)
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0", silence_logs=50)
    scheduler = cluster.scheduler

    def pids() -> dict[str, int]:
        return {addr: w.pid for addr, w in scheduler.workers.items()}

    def say(doc: dict) -> None:
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()

    say({"address": cluster.scheduler_address, "pids": list(pids().values())})
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "pids":
            say({"pids": list(pids().values())})
        elif cmd == "kill-busy":
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                busy = [(addr, len(w.processing)) for addr, w in list(scheduler.workers.items()) if w.processing]
                if busy:
                    addr, held = busy[0]
                    pid = pids()[addr]
                    os.kill(pid, signal.SIGKILL)
                    say({"killed": pid, "tasks": held})
                    break
                time.sleep(0.002)
            else:
                say({"killed": None})
        elif cmd == "tasks":
            say({"transitions": scheduler.transition_counter})
        elif cmd == "wait-workers":
            deadline = time.monotonic() + 60
            while len(scheduler.workers) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            say({"pids": list(pids().values())})
    cluster.close()


if __name__ == "__main__":
    main()
