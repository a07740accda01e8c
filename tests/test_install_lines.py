"""The install lines of the README and docs/agents.md work from a clean clone and from a wheel,
each in a fresh virtual environment: catty-ctx and its recall server's SDK then run from it.

The lines run with `--no-deps` added (the dependencies, and pip itself, come from this test's
environment through a .pth file, so the fresh environment gets catty-ctx only from the line
itself; pip still fetches the build's setuptools, as any install from source does); `pytest -m
slow` runs them as written."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support import ROOT

# --ignore-installed: the fresh environment sees this one's packages through a .pth, a regular install
# of catty-ctx among them, and pip would take the wheel of the same version as already satisfied.
NO_DEPS = "--no-deps --ignore-installed"


def _block(doc: Path, heading: str) -> list[str]:
    text = doc.read_text()
    start = text.index("```", text.index(heading))
    body = text[text.index("\n", start) + 1: text.index("```", start + 3)]
    return [line.split("  #")[0].strip() for line in body.splitlines() if line.strip()]


def install_lines() -> dict[str, str]:
    """The clone's and the wheel's install line of each page, as the page writes them."""
    readme = (ROOT / "README.md").read_text()
    agents = (ROOT / "docs" / "agents.md").read_text()
    clone = _block(ROOT / "README.md", "## Inside Claude Code and Codex")[0]
    assert clone == _block(ROOT / "docs" / "agents.md", "## Set-up")[0] == "pip install '.[mcp]'"
    wheel_install = re.search(r'pip install "\$\(ls dist/catty_ctx-\*\.whl\)\[mcp\]"', readme)
    wheel_build = re.search(r"pip wheel --no-deps -w dist \.", agents)
    assert wheel_install and wheel_build and wheel_install.group() in agents
    return {"clone": clone, "wheel": f"{wheel_build.group()} && {wheel_install.group()}"}


def _clone(tmp_path: Path) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    dest = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(dest)], check=True, capture_output=True)
    return dest


def _venv(where: Path, *, deps: bool) -> Path:
    # With DEPS, pip too comes from this environment (installing a copy of it into every fresh
    # one costs seconds): its `pip` program, as its own script runs it, with the fresh interpreter.
    subprocess.run([sys.executable, "-m", "venv", *(["--without-pip"] if deps else []), str(where)], check=True, capture_output=True)
    if deps:  # this environment's packages (not its catty-ctx: a .pth entry's own .pth files are not read)
        site = Path(subprocess.run([str(where / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip())
        (site / "zz_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        pip = where / "bin" / "pip"
        pip.write_text(f"#!{where / 'bin' / 'python'}\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n")
        pip.chmod(0o755)
    return where


def _without_deps(line: str) -> str:
    return line.replace("pip install ", f"pip install {NO_DEPS} ")


def _check(venv: Path, clone: Path) -> None:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(clone.parent)}
    version = subprocess.run(["catty-ctx", "--version"], capture_output=True, text=True, env=env, cwd=clone.parent)
    assert version.returncode == 0 and version.stdout.startswith("catty-ctx "), version.stderr
    where = subprocess.run(["python", "-c", "import catty_ctx, mcp; print(catty_ctx.__file__)"], capture_output=True, text=True, env=env,
                           cwd=clone.parent)
    assert where.returncode == 0 and where.stdout.startswith(str(venv)), (where.stdout, where.stderr)  # the fresh install, not a checkout
    server = subprocess.run(["catty-ctx", "mcp", "--help"], capture_output=True, text=True, env=env, cwd=clone.parent)
    assert server.returncode == 0, server.stderr


@pytest.mark.long
@pytest.mark.parametrize("kind", ["clone", "wheel"])
def test_the_install_lines_work_from_a_clean_clone_in_a_fresh_environment(tmp_path: Path, kind: str) -> None:
    clone = _clone(tmp_path)
    venv = _venv(tmp_path / "venv", deps=True)
    line = _without_deps(install_lines()[kind])
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    _check(venv, clone)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["clone", "wheel"])
def test_the_install_lines_as_written(tmp_path: Path, kind: str) -> None:
    clone = _clone(tmp_path)
    venv = _venv(tmp_path / "venv", deps=False)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", install_lines()[kind]], cwd=clone, env=env, capture_output=True, text=True,
                         timeout=1800)
    assert ran.returncode == 0, ran.stderr[-3000:]
    _check(venv, clone)
