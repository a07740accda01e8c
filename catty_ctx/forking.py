"""When a command may fork workers: `fork` exists, there is a CPU for them, no other thread runs.

A caller's threads could hold locks (the allocator's, logging's, an I/O buffer's) that a forked
child would never see released, so a library caller running threads gets the one-process path.
Imports nothing heavy: the usage ledger asks before it knows it has anything to parse.
"""
from __future__ import annotations

import os
import sys


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether forking a worker is safe and could help here."""
    if not hasattr(os, "fork") or usable_cpus() < 2:
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1
