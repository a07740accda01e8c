"""The test suite's helpers (one package, imported by the tests as `support`): running the
program in this process or in a fresh one, building logs and events, masking stamps, and the
builders of trees, corpora and servers in its modules. Fixtures and hooks stay in conftest.py."""
from __future__ import annotations

import io
import itertools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "fixtures"
# The program as its installed script runs it, for `python -S -c` (see `installed_path`).
INSTALLED_PROGRAM = "import sys\nfrom catty_ctx.__main__ import main\nsys.argv[0] = 'catty-ctx'\nmain()"


def installed_path() -> str:
    """PYTHONPATH for the program run as installed without the site module (`python -S`): the
    project, then the environment's package folders (no editable finder)."""
    return os.pathsep.join(dict.fromkeys([str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]))


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
    (tests/support/forked_cli.py): a process of its own that imports the program afresh (its config and
    defaults load as they do at start-up), for tests whose subject is not what a fresh
    interpreter imports."""
    from . import forked_cli

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
    code = ("import sys\nfrom catty_ctx.cli.app import main\ncode = None\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
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

    from catty_ctx.cli.app import COMMAND_MODULES, get_app, load_commands
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
    from . import forked_terminal

    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=str(columns), TERM="xterm")
    code, shown, other = forked_terminal.run(args, env=env, tty=stream, cwd=cwd, raw=raw, stdin=stdin)
    return code, other, shown


class DaskCluster:
    """The shared LocalCluster (2 worker processes) of the fleet tests, run by tests/support/fleet_cluster.py."""

    def __init__(self, proc: subprocess.Popen[str], address: str) -> None:
        self.proc = proc
        self.address = address

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return orjson.loads(self.proc.stdout.readline())  # type: ignore[no-any-return]
