"""The suite's hooks and fixtures; its helpers are the `support` package (tests/support/)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.register_assert_rewrite("support")  # its checks fail with the values they compared, as a test's do

from support import FIXTURES, ROOT, DaskCluster  # noqa: E402
from support.scripted_server import endpoint  # noqa: F401 - the local model endpoint fixture, for every test
from agents.fixtures import agents_setup, claude, codex, fake_anthropic, fake_openai, fake_xai, grok, loopback  # noqa: F401 - the real-agent harness (tests/agents/README.md)



def pytest_configure(config: pytest.Config) -> None:
    """Compile the package's bytecode once, as an install does: the many `catty-ctx` processes
    the tests start then read it instead of compiling every module they import, also where
    the environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE). The same for the test
    modules: each worker collects all of them, and would otherwise rewrite every assert again."""
    if not hasattr(config, "workerinput"):  # the controller only: one compile for all workers
        import compileall

        _scratch_in_memory()

        compileall.compile_dir(str(ROOT / "catty_ctx"), quiet=2)
        tests = ROOT / "tests"
        rewritten = [p for p in tests.rglob("*.py") if p.name == "conftest.py" or p.name.startswith("test_")]
        for helper in sorted(set(tests.rglob("*.py")) - set(rewritten)):
            compileall.compile_file(str(helper), quiet=2)
        _rewrite_asserts_once(config, rewritten)


def _scratch_in_memory(root: Path = Path("/dev/shm"), room: int = 4 << 30) -> None:
    """Every test's scratch files (tmp_path, the temporary folders tests and runs make) in a
    folder of this user on the memory file system ROOT, where it has ROOM free: a run writes
    about 650 MB (sessions, copies, blobs), each whole-file write with its fsync, and removes the
    folder of the run three runs back; on a disk both cost seconds of the run. The workers and
    every process they start inherit TMPDIR; a TMPDIR already set decides, as usual."""
    if os.environ.get("TMPDIR"):
        return
    try:
        fs = os.statvfs(root)
        if fs.f_bavail * fs.f_frsize < room:
            return
        scratch = root / f"scratch-{os.getuid()}"  # (not the program's name: tests look for it in what a run prints)
        scratch.mkdir(mode=0o700, exist_ok=True)
        own = os.lstat(scratch)
    except OSError:
        return
    import stat
    import tempfile

    if not stat.S_ISDIR(own.st_mode) or own.st_uid != os.getuid() or own.st_mode & 0o077:
        return  # not a folder of this user's alone: the usual temporary folder
    os.environ["TMPDIR"] = str(scratch)
    tempfile.tempdir = None  # gettempdir() asks again


def _rewrite_asserts_once(config: pytest.Config, modules: list[Path], *, fork: bool = True) -> None:
    """Write pytest's cache of the assert-rewritten MODULES (read by every worker, even where
    writing bytecode is forbidden) where it is missing or stale; with FORK, the stale ones shared
    out to one forked process per usable CPU (a fresh clone rewrites every test module). Best
    effort: the helpers are pytest's own, and without them each worker rewrites the modules it
    imports, as usual."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    state = config.stash.get(rewrite.assertstate_key, None)
    needed = ("PYC_TAIL", "_read_pyc", "_rewrite_test", "_write_pyc", "get_cache_dir")
    if state is None or config.getoption("assertmode") != "rewrite" or not all(hasattr(rewrite, n) for n in needed):
        return

    def cached(module: Path) -> Path:
        return rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)

    stale = [m for m in modules if rewrite._read_pyc(m, cached(m)) is None]
    parts = min(_usable_cpus(), len(stale) // 8) if fork else 1
    children = []
    for part in range(1, parts):
        pid = os.fork()
        if pid == 0:
            try:
                _write_rewritten(config, state, stale[part::parts], cached)
            finally:
                os._exit(0)
        children.append(pid)
    _write_rewritten(config, state, stale[0::max(parts, 1)], cached)
    for pid in children:
        os.waitpid(pid, 0)


def _write_rewritten(config: pytest.Config, state: Any, modules: list[Path], cached: Callable[[Path], Path]) -> None:
    from _pytest.assertion import rewrite

    for module in modules:
        pyc = cached(module)
        try:
            pyc.parent.mkdir(exist_ok=True)
        except OSError:
            continue
        source_hash, code = rewrite._rewrite_test(module, config)
        rewrite._write_pyc(state, code, source_hash, pyc)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _cache_rewritten_plugins(session.config)


def _cache_rewritten_plugins(config: pytest.Config) -> None:
    """The plugins' modules pytest rewrote in this process (their packages ask for it: xdist,
    hypothesis, anyio, ...) cached as the test modules are, so the next run's processes read them
    instead of each rewriting them again where writing bytecode is forbidden."""
    from _pytest.assertion import rewrite

    state = config.stash.get(rewrite.assertstate_key, None)
    rewritten = getattr(getattr(state, "hook", None), "_rewritten_names", None)
    if isinstance(rewritten, dict):
        plugins = [Path(p) for p in rewritten.values() if not Path(p).is_relative_to(ROOT)]
        _rewrite_asserts_once(config, plugins, fork=False)


def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: one worker more than the usable CPUs. Many tests wait (deadlines, timeouts, a
    summariser that sleeps, a cluster starting): the extra worker runs while one of them waits.
    PYTEST_XDIST_AUTO_NUM_WORKERS, when set, decides as usual."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return _usable_cpus() + 1


def pytest_runtest_setup(item: pytest.Item) -> None:
    agents_setup(item)


LONG_TEST = 10.0  # the weight of a test marked `long`: seconds, against ...
OTHER_TEST = 0.15  # ... any other test's (most take milliseconds, those that start processes a second)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files in the order the workers get them (--dist loadfile, --no-loadscope-reorder):
    the heaviest first, by the weight of their tests (LONG_TEST, OTHER_TEST), so that the long
    ones start at once and the run ends on short files; within a file, its own order."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def weight(tests: list[pytest.Item]) -> float:
        return sum(LONG_TEST if t.get_closest_marker("long") else OTHER_TEST for t in tests)

    items[:] = [item for tests in sorted(files.values(), key=weight, reverse=True) for item in tests]


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test touches the real cache or config folders."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A private copy of the demo session."""
    dest = tmp_path / "demo"
    shutil.copytree(FIXTURES / "sessions" / "demo", dest)
    return dest


@pytest.fixture(scope="module")
def dask_cluster() -> Any:
    """One LocalCluster for the cluster tests of a module (starting one costs seconds), closed
    when the module is done: an idle cluster's processes keep spending CPU on heartbeats."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "fleet_cluster.py")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if not first:
        proc.kill()
        raise AssertionError("the test cluster did not start")
    yield DaskCluster(proc, orjson.loads(first)["address"])
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
