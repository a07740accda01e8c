from __future__ import annotations

import io
import itertools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from scripted_server import endpoint  # noqa: F401 - the local model endpoint fixture, for every test
from agents.fixtures import agents_setup, claude, codex, fake_anthropic, fake_openai, fake_xai, grok, loopback  # noqa: F401 - the real-agent harness (tests/agents/README.md)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


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


def fixture_session(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / "sessions" / name, dest)
    return dest


def cli_process(*args: str, input: bytes | None = None, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess[bytes]:
    """Run the real program in a subprocess: for tests where the process boundary is the point
    (signals, OS pipes between processes, start-up, what a fresh interpreter imports)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "catty_ctx", *args],
        input=input if input is not None else b"",
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr.decode()}")
    return proc


def forked_process(*args: str, input: bytes | None = None, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess[bytes]:
    """`cli_process`, forked from a process that has imported the third-party libraries
    (tests/forked_cli.py): a process of its own that imports the program afresh (its config and
    defaults load as they do at start-up), for tests whose subject is not what a fresh
    interpreter imports."""
    import forked_cli

    proc = subprocess.run([*forked_cli.command(forked_cli.LIBRARIES), *args], input=input if input is not None else b"",
                          capture_output=True, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr.decode()}")
    return proc


def both_parsers(command: str, *args: str, input: bytes | None = None, setup: Callable[[], Any] | None = None,
                 outcome: Callable[[subprocess.CompletedProcess[bytes]], Any] | None = None) -> None:
    """The command's own parser (cli/fastpath.py) and typer give the same exit, stdout and stderr
    (SETUP, when given, runs before each: a command that writes finds the same files both times).
    OUTCOME, when given, says what of a run must agree instead, taken right after it: a command
    that makes a fresh id or time masks it (`unstamped`) and adds the files it wrote.

    Both run in this process (`cli`), the second with the command's own parser declining every
    spelling, so many cases cost no interpreter each."""
    seen = outcome or (lambda proc: (proc.returncode, proc.stdout, proc.stderr))
    if setup is not None:
        setup()
    fast = seen(cli(command, *args, input=input))
    if setup is not None:
        setup()
    slow = seen(typer_cli(command, *args, input=input))
    assert fast == slow, args


def typer_cli(command: str, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """`cli` with COMMAND's own parser declining (as it does for a spelling it leaves to typer), so
    typer parses ARGS: the path `both_parsers` holds to the fast one's answers."""
    import importlib

    from catty_ctx.cli.registry import BY_NAME

    module = importlib.import_module(f"catty_ctx.cli.{BY_NAME[command].module}")
    own = module.parse_args
    module.parse_args = lambda _args: None
    try:
        return cli(command, *args, input=input)
    finally:
        module.parse_args = own


_STAMPS = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def unstamped(data: bytes) -> bytes:
    """DATA with its random ids (UUIDs) and clock times (ISO 8601, UTC) masked: what two runs that
    write a new session or event must agree on."""
    return _STAMPS.sub(b"<stamp>", data)


def unstamped_files(folder: Path) -> dict[str, bytes]:
    """Every file below FOLDER (relative path → its bytes, `unstamped`); a missing FOLDER has none."""
    return {str(p.relative_to(folder)): unstamped(p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()}


def writes_below(folder: Path) -> Callable[[subprocess.CompletedProcess[bytes]], Any]:
    """An `outcome` for `both_parsers` of a command that writes below FOLDER: exit, stdout, stderr and
    every file below FOLDER, each `unstamped`."""
    return lambda proc: (proc.returncode, unstamped(proc.stdout), unstamped(proc.stderr), unstamped_files(folder))


def plain_run(command: str, *args: str, input: bytes | None = None,
              heavy: tuple[str, ...] = ("typer", "click", "rich")) -> tuple[Any, list[str], subprocess.CompletedProcess[bytes]]:
    """Run COMMAND ARGS (INPUT on stdin) through the program's entry point in a fresh interpreter (as the
    installed script does): its exit code, which of the modules HEAVY it imported on the way, and the
    process (its stdout, and its stderr without the line that said so)."""
    code = ("import sys\nfrom catty_ctx.cli import main\ncode = None\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
            f"loaded = sorted(m for m in {heavy!r} if m in sys.modules)\nimport json\nprint(json.dumps([code, loaded]), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, command, *args], input=input, capture_output=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, check=False)
    head, _, last = proc.stderr.rstrip(b"\n").rpartition(b"\n")
    status, loaded = orjson.loads(last)
    proc.stderr = head + b"\n" if head else b""
    return status, loaded, proc


def plain_run_loads(command: str, *args: str, input: bytes | None = None,
                    heavy: tuple[str, ...] = ("typer", "click", "rich")) -> tuple[Any, list[str]]:
    """`plain_run`'s exit code and the modules of HEAVY imported, without the process."""
    status, loaded, _proc = plain_run(command, *args, input=input, heavy=heavy)
    return status, loaded


def table_is_the_typer_commands(name: str, arguments: list[str] | None = None) -> Any:
    """Check that the option table of command NAME (cli/fastpath.py; "GROUP SUB" for a subcommand, whose
    module keeps its tables by SUB) is its typer command's: the same options (short ones too), least values
    (the parser's own floor is 0) and greatest ones; and, when given, that its positional ARGUMENTS (all
    required) are these parameters of `run`, in order. The command, for more checks."""
    import importlib

    import typer

    from catty_ctx.cli import COMMAND_MODULES, get_app, load_commands
    from catty_ctx.cli.fastpath import minimums, options

    group, _, sub = name.partition(" ")
    module = importlib.import_module(f"catty_ctx.cli.{COMMAND_MODULES[group]}")
    load_commands([group])
    command = typer.main.get_command(get_app()).commands[group]  # type: ignore[attr-defined]
    table = module.PARAMS
    if sub:
        command, table = command.commands[sub], table[sub]
    known, floors = options(table), minimums(table)
    options = [p for p in command.params if p.param_type_name == "option"]
    assert {opt: (p.name, not p.is_flag) for p in options for opt in p.opts} == known
    least = {p.name: p.type.min for p in options if getattr(p.type, "min", None) is not None}
    assert least == {n: floors.get(n, 0) for n in least} and set(floors) <= set(least)
    most = {p.name: p.type.max for p in options if getattr(p.type, "max", None) is not None}
    assert most == {o.dest: o.settings["max"] for o in table if "max" in o.settings}
    if arguments is not None:
        assert [(p.name, p.required) for p in command.params if p.param_type_name == "argument"] == [(a, True) for a in arguments]
    return command


class _Stream(io.TextIOWrapper):
    """A standard stream over a byte buffer: not a terminal, no file descriptor (as a pipe
    seen through `isatty()`; the code under test writes bytes to `.buffer` or text to it)."""

    def __init__(self, data: bytes = b"") -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8", errors="surrogateescape", write_through=True)

    def bytes(self) -> bytes:
        self.flush()
        return self.buffer.getvalue()  # type: ignore[attr-defined]


def cli(*args: str, input: bytes | None = None, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess[bytes]:
    """Run the program's entry point in this process, with stdin, stdout and stderr as byte
    buffers (a pipe, as a script sees it): exit code, stdout and stderr as a user sees them,
    without paying for an interpreter per call."""
    from catty_ctx.__main__ import main

    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv, os.getcwd()
    out, err = _Stream(), _Stream()
    sys.stdin, sys.stdout, sys.stderr = _Stream(input or b""), out, err
    sys.argv = ["catty-ctx", *args]
    code: int = 0
    try:
        if cwd is not None:
            os.chdir(cwd)
        main()
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:  # sys.exit("message"), as the interpreter reports it
            err.write(f"{exc.code}\n")
            code = 1
    except BaseException:  # an uncaught error: the traceback and exit 1, as a process would end
        import traceback

        err.write(traceback.format_exc())
        code = 1
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv, cwd_before = saved
        os.chdir(cwd_before)
    proc = subprocess.CompletedProcess(["catty-ctx", *args], code, out.bytes(), err.bytes())
    if check and code != 0:
        raise AssertionError(f"exit {code}: {proc.stderr.decode()}")
    return proc


def without_timings(doc: Any) -> Any:
    """DOC without its measured durations (keys ending in _seconds): what two runs must agree on."""
    if isinstance(doc, dict):
        return {k: without_timings(v) for k, v in doc.items() if not k.endswith("_seconds")}
    if isinstance(doc, list):
        return [without_timings(v) for v in doc]
    return doc


def jsonl(data: bytes) -> list[Any]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def write_log(path: Path, events: list[dict[str, Any]], *, raw_tail: bytes = b"") -> Path:
    """A session directory with exactly these events (envelopes filled in)."""
    path.mkdir(parents=True, exist_ok=True)
    lines = []
    for seq, ev in enumerate(events):
        full = {"v": 1, "seq": seq, "ts": f"2026-11-01T00:00:{seq % 60:02d}.000Z", **ev}
        lines.append(orjson.dumps(full) + b"\n")
    (path / "updates.jsonl").write_bytes(b"".join(lines) + raw_tail)
    return path


def session_event(sid: str = "s-1", **kw: Any) -> dict[str, Any]:
    return {"kind": "session", "session_id": sid, **kw}


_message_ids = itertools.count(1)


def msg(role: str, text: str, i: str | None = None, **kw: Any) -> dict[str, Any]:
    """A message event; each gets its own id unless I names one (an append skips an id the log holds)."""
    return {"kind": "message", "id": i if i is not None else f"m{next(_message_ids)}", "role": role, "text": text, **kw}


def call(cid: str, name: str = "t", args: Any = None) -> dict[str, Any]:
    return {"kind": "tool_call", "call_id": cid, "name": name, "args": args if args is not None else {}}


def result(cid: str, output: str = "ok", is_error: bool = False) -> dict[str, Any]:
    return {"kind": "tool_result", "call_id": cid, "output": output, "is_error": is_error}


def cli_on_a_terminal(*args: str, stream: str = "stderr", columns: int = 100, cwd: Path | None = None,
                      raw: bool = False, stdin: Path | None = None) -> tuple[int, bytes, bytes]:
    """Run the program with STREAM (stderr or stdout) on a pseudo-terminal: (exit code, the
    other stream, what the terminal showed). RAW: the terminal translates no newline, so what
    it shows is byte for byte what the program wrote. STDIN: a file read as standard input."""
    import forked_terminal

    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=str(columns), TERM="xterm")
    code, shown, other = forked_terminal.run(args, env=env, tty=stream, cwd=cwd, raw=raw, stdin=stdin)
    return code, other, shown


class DaskCluster:
    """The shared LocalCluster (2 worker processes) of the fleet tests, run by tests/fleet_cluster.py."""

    def __init__(self, proc: subprocess.Popen[str], address: str) -> None:
        self.proc = proc
        self.address = address

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return orjson.loads(self.proc.stdout.readline())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def dask_cluster() -> Any:
    """One LocalCluster for the cluster tests of a module (starting one costs seconds), closed
    when the module is done: an idle cluster's processes keep spending CPU on heartbeats."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fleet_cluster.py")], stdin=subprocess.PIPE,
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
