"""The package's public names: each one resolves and says what it is."""
from __future__ import annotations

import subprocess
import sys

import catty_ctx
from support import ROOT


def test_every_public_name_resolves_and_has_a_docstring() -> None:
    undocumented = []
    for name in catty_ctx.__all__:
        value = getattr(catty_ctx, name)  # an AttributeError here is a broken public name
        if name != "__version__" and not (getattr(value, "__doc__", None) or "").strip():
            undocumented.append(name)
    assert not undocumented


def test_the_repair_entries_are_the_repair_modules_own() -> None:
    from catty_ctx.repair import fix, plan

    assert catty_ctx.analyse is plan.analyse and catty_ctx.repair_session is fix.repair_session
    assert catty_ctx.repaired_items is fix.repaired_items


def test_the_documented_one_liner_runs() -> None:
    code = "import catty_ctx as c; [getattr(c, n) for n in c.__all__]"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 0, proc.stderr.decode()
