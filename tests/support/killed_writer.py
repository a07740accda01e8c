"""A writer killed -9 inside a write, forced where it matters (docs/reliability.md#atomic-appends):
catty-ctx run in a child process that writes part of what it was writing, then SIGKILLs itself."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from support import ROOT

# WHERE: "lines", "torn" or "whole", the batch's one write, which the system ends part way
# (between pages: whole lines, then a torn one; or whole lines only) or after the batch, before
# its record is dropped; "copying", the copy of a cut batch into quarantine (by the writer
# settling it), its temp file written; "kept", that copy made and indexed, the log not cut yet.
KILLED_INSIDE = """
import os, signal, sys
from catty_ctx.session import store

where = sys.argv[1]

def write_part(fd, batch, start, display):
    first = batch.index(b"\\n") + 1
    second = batch.index(b"\\n", first) + 1
    cut = {"torn": first + (second - first) // 2, "lines": second, "whole": len(batch)}[where]
    os.write(fd, batch[:cut])
    os.kill(os.getpid(), signal.SIGKILL)

def write_then_die(path, fill, **kw):
    def fill_and_die(f):
        fill(f)
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write_file(path, fill_and_die, **kw)

def kept_then_die(*args, **kw):
    real_quarantine_bytes(*args, **kw)
    os.kill(os.getpid(), signal.SIGKILL)

real_write_file, real_quarantine_bytes = store.write_file, store.quarantine_bytes
if where == "copying":
    store.write_file = write_then_die
elif where == "kept":
    store.quarantine_bytes = kept_then_die
else:
    store.write_batch = write_part
sys.argv = ["catty-ctx", *sys.argv[2:]]
from catty_ctx.__main__ import main
main()
"""


def killed_inside(where: str, *args: str, input: bytes = b"") -> None:
    """`catty-ctx ARGS` killed -9 at WHERE (see KILLED_INSIDE); it must not end otherwise."""
    proc = subprocess.run([sys.executable, "-c", KILLED_INSIDE, where, *args], input=input, capture_output=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
