"""Runs the real Claude Code and Codex CLIs inside the loopback namespace, each with a temp
home of its own, the quiet environment and its fake model server; finds what they wrote."""
from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import orjson

from .anthropic_fake import FakeAnthropic
from .netns import LoopbackNamespace
from .openai_fake import FakeResponses
from .xai_fake import FakeXai

ROOT = Path(__file__).resolve().parents[2]
# The pins: one place, read by the harness and installed by .ci/run.
PINS_FILE = ROOT / ".ci" / "agents" / "package.json"
CI_BIN = ROOT / ".ci" / "agents" / "node_modules" / ".bin"
BIN_ENV = "CATTY_CTX_AGENTS_BIN"  # a folder holding `claude`, `codex` and `grok` (an npm .bin)
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "grok": "@xai-official/grok"}


def pinned_version(agent: str) -> str:
    return orjson.loads(PINS_FILE.read_bytes())["dependencies"][PACKAGES[agent]]


def bin_dirs() -> list[Path]:
    """Where the CLIs are looked for: $CATTY_CTX_AGENTS_BIN, then the folder .ci/run installs into."""
    dirs = [Path(p) for p in os.environ.get(BIN_ENV, "").split(os.pathsep) if p]
    return [*dirs, CI_BIN]


@functools.cache
def locate(agent: str) -> tuple[Path | None, str]:
    """(path of the CLI, "") when the pinned version is found, else (None, why not)."""
    want = pinned_version(agent)
    seen = []
    for d in bin_dirs():
        exe = d / agent
        if not exe.exists():
            continue
        try:
            out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            seen.append(f"{exe}: {e}")
            continue
        found = re.search(r"\d+\.\d+\.\d+", out)
        if found and found.group() == want:
            return exe, ""
        seen.append(f"{exe} is {out.strip() or 'unknown'}")
    where = "; ".join(seen) or f"not in ${BIN_ENV} nor .ci/agents (.ci/run installs it there)"
    return None, f"{agent} {want} not found ({where})"


def base_env(home: Path, **extra: str) -> dict[str, str]:
    """A fresh environment: none of the caller's agent, proxy or API variables leak in."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
           "TMPDIR": os.environ.get("TMPDIR", "/tmp"), "NO_COLOR": "1"}
    for keep in ("VIRTUAL_ENV", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    # a hook or MCP server the agent starts as `catty_ctx_command(...)` runs this checkout
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.update(extra)
    return env


def catty_ctx_command(*args: str) -> str:
    """The command line (for a hook's `command` or an MCP server entry) that runs this
    checkout's catty-ctx with ARGS, with the interpreter of the tests."""
    return shlex.join([sys.executable, "-m", "catty_ctx", *args])


@dataclass
class Ran:
    """A finished CLI run."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    session_id: str | None = None
    json: Any = None  # Claude's --output-format json result

    def check(self) -> Ran:
        if self.returncode != 0:
            raise AssertionError(f"{self.argv[0]} exited {self.returncode}\nstdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-2000:]}")
        return self


def _run(ns: LoopbackNamespace, argv: list[str], env: dict[str, str], cwd: Path, timeout: float, stdin: str | None) -> Ran:
    t = time.monotonic()
    try:
        p = subprocess.run(ns.wrap(argv), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                           input=stdin if stdin is not None else "")
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{Path(argv[0]).name} ran over {timeout}s\nstdout: {(e.stdout or b'')[-2000:]!r}\nstderr: {(e.stderr or b'')[-2000:]!r}") from None
    return Ran(argv, p.returncode, p.stdout, p.stderr, time.monotonic() - t)


def with_json(ran: Ran, id_key: str) -> Ran:
    """RAN with its stdout parsed into `.json` (None: not JSON) and the session id at ID_KEY."""
    try:
        ran.json = orjson.loads(ran.stdout)
    except orjson.JSONDecodeError:
        ran.json = None
    if isinstance(ran.json, dict):
        ran.session_id = ran.json.get(id_key)
    return ran


def only(found: list[Path], what: str) -> Path:
    assert len(found) == 1, f"{what}: {len(found)} files found {found}"
    return found[0]


def project_slug(cwd: str | Path) -> str:
    """The folder Claude Code keeps a working directory's sessions in (under ~/.claude/projects)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@dataclass
class Claude:
    """Claude Code in `-p` mode against `server`. HOME is `home` (so ~/.claude is
    `home/.claude`), the working directory `cwd`."""

    ns: LoopbackNamespace
    server: FakeAnthropic
    exe: Path
    home: Path
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)  # added to every run

    QUIET: ClassVar[dict[str, str]] = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}

    @property
    def config_dir(self) -> Path:
        return self.home / ".claude"

    def environment(self, **extra: str) -> dict[str, str]:
        return base_env(self.home, ANTHROPIC_BASE_URL=self.server.base_url, ANTHROPIC_API_KEY="sk-ant-fake",
                        IS_SANDBOX="1", **self.QUIET, **self.env, **extra)

    @property
    def project_dir(self) -> Path:
        """~/.claude/projects/<slug of cwd>: where `--resume ID` looks for ID.jsonl (put a
        written copy there to have Claude Code resume it)."""
        return self.config_dir / "projects" / project_slug(self.cwd)

    def write_settings(self, settings: dict[str, Any]) -> Path:
        """~/.claude/settings.json (user scope): hooks, permissions, env ..."""
        path = self.config_dir / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(settings, option=orjson.OPT_INDENT_2))
        return path

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120, stdin: str | None = None,
            cwd: Path | None = None, check: bool = True) -> Ran:
        """`claude ARGS` as is (no flag added)."""
        ran = _run(self.ns, [str(self.exe), *args], self.environment(**(env or {})), cwd or self.cwd, timeout, stdin)
        return ran.check() if check else ran

    def prompt(self, text: str, *args: str, resume: str | None = None, skip_permissions: bool = True, **kw: Any) -> Ran:
        """`claude -p TEXT --output-format json [--resume ID] [ARGS]`: the parsed result in
        `.json`, the session id in `.session_id`. `/compact` as TEXT compacts (with resume)."""
        argv = ["-p", text, "--output-format", "json"]
        if resume:
            argv += ["--resume", resume]
        if skip_permissions:
            argv.append("--dangerously-skip-permissions")
        return with_json(self.run(*argv, *args, **kw), "session_id")

    def transcripts(self) -> list[Path]:
        """Every main transcript under ~/.claude/projects (subagents left out), oldest first."""
        found = [p for p in (self.config_dir / "projects").glob("*/*.jsonl")]
        return sorted(found, key=lambda p: p.stat().st_mtime_ns)

    def transcript(self, session_id: str) -> Path:
        return only(list((self.config_dir / "projects").glob(f"*/{session_id}.jsonl")), f"transcript of {session_id}")

    def records(self, session_id: str) -> list[dict[str, Any]]:
        return read_jsonl(self.transcript(session_id))


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return orjson.dumps(v).decode()  # a JSON string is a TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r}")


@dataclass
class Codex:
    """Codex `exec` against `server`, with CODEX_HOME = `home/.codex`. `config` adds top-level
    keys of config.toml (e.g. model_auto_compact_token_limit), `extra_toml` adds tables
    (e.g. "[mcp_servers.x]\\ncommand = ..."); both are written before each run."""

    ns: LoopbackNamespace
    server: FakeResponses
    exe: Path
    home: Path
    cwd: Path
    model: str = "gpt-5.1-codex"
    config: dict[str, Any] = field(default_factory=dict)
    extra_toml: str = ""
    env: dict[str, str] = field(default_factory=dict)
    features: dict[str, bool] = field(default_factory=dict)  # over the defaults: plugins, remote plugins and apps off

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def config_path(self) -> Path:
        return self.codex_home / "config.toml"

    def config_text(self) -> str:
        top = {"model": self.model, "model_provider": "fake", "check_for_update_on_startup": False, **self.config}
        lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
        lines += ["", "[model_providers.fake]", 'name = "fake"', f"base_url = {toml_value(self.server.base_url)}",
                  'env_key = "FAKE_OPENAI_KEY"', 'wire_api = "responses"', "request_max_retries = 0", "stream_max_retries = 0",
                  "", "[analytics]", "enabled = false",
                  "", "[features]"]
        features = {"plugins": False, "remote_plugin": False, "apps": False, **self.features}
        lines += [f"{k} = {toml_value(v)}" for k, v in features.items()] + [""]
        return "\n".join(lines) + self.extra_toml

    def environment(self, **extra: str) -> dict[str, str]:
        return base_env(self.home, CODEX_HOME=str(self.codex_home), FAKE_OPENAI_KEY="sk-fake", **self.env, **extra)

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120, stdin: str | None = None,
            cwd: Path | None = None, check: bool = True) -> Ran:
        """`codex ARGS` as is, config.toml written first."""
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self.config_text())
        ran = _run(self.ns, [str(self.exe), *args], self.environment(**(env or {})), cwd or self.cwd, timeout, stdin)
        found = re.search(r"^session id: (\S+)$", ran.stderr + ran.stdout, re.MULTILINE)
        ran.session_id = found.group(1) if found else None
        return ran.check() if check else ran

    def exec(self, text: str, *args: str, resume: str | None = None, bypass: bool = True, **kw: Any) -> Ran:
        """`codex exec --skip-git-repo-check [--dangerously-bypass-approvals-and-sandbox] [ARGS]
        [resume ID] TEXT`; the session id (from its banner) in `.session_id`."""
        argv = ["exec", "--skip-git-repo-check"]
        if bypass:
            argv.append("--dangerously-bypass-approvals-and-sandbox")
        argv += list(args)
        if resume:
            argv += ["resume", resume]
        return self.run(*argv, text, **kw)

    def rollout_path(self, session_id: str, when: str = "2026-01-01T00-00-00") -> Path:
        """Where a rollout of `session_id` goes for `codex exec resume ID` to find it
        (CODEX_HOME/sessions/YYYY/MM/DD/rollout-<when>-<id>.jsonl)."""
        y, m, d = when[:10].split("-")
        return self.codex_home / "sessions" / y / m / d / f"rollout-{when}-{session_id}.jsonl"

    def rollouts(self) -> list[Path]:
        """Every rollout under CODEX_HOME/sessions, oldest first."""
        return sorted((self.codex_home / "sessions").rglob("rollout-*.jsonl"), key=lambda p: p.stat().st_mtime_ns)

    def rollout(self, session_id: str) -> Path:
        return only(list((self.codex_home / "sessions").rglob(f"rollout-*-{session_id}.jsonl")), f"rollout of {session_id}")

    def records(self, session_id: str) -> list[dict[str, Any]]:
        return read_jsonl(self.rollout(session_id))


@dataclass
class Grok:
    """Grok Build in `-p` mode against `server`, with HOME = `home` and GROK_HOME =
    `home/.grok`; every xAI URL points at the server, an API key selects key auth."""

    ns: LoopbackNamespace
    server: FakeXai
    exe: Path
    home: Path
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def grok_home(self) -> Path:
        return self.home / ".grok"

    def environment(self, **extra: str) -> dict[str, str]:
        base = self.server.base_url
        urls = {k: base for k in ("GROK_XAI_API_BASE_URL", "GROK_CLI_CHAT_PROXY_BASE_URL", "GROK_MODELS_BASE_URL",
                                  "GROK_FEEDBACK_BASE_URL", "GROK_TRACE_UPLOAD_URL", "GROK_MANAGED_CONFIG_URL")}
        return base_env(self.home, GROK_HOME=str(self.grok_home), XAI_API_KEY="xai-fake", GROK_DISABLE_AUTOUPDATER="1",
                        **urls, **self.env, **extra)

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120, stdin: str | None = None,
            cwd: Path | None = None, check: bool = True) -> Ran:
        """`grok ARGS` as is."""
        ran = _run(self.ns, [str(self.exe), *args], self.environment(**(env or {})), cwd or self.cwd, timeout, stdin)
        return ran.check() if check else ran

    def prompt(self, text: str, *args: str, resume: str | None = None, fork: bool = False, **kw: Any) -> Ran:
        """`grok -p TEXT --always-approve --output-format json [--resume ID [--fork-session]]
        [ARGS]`: the parsed result in `.json`, its `sessionId` in `.session_id`."""
        argv = ["-p", text, "--always-approve", "--output-format", "json"]
        if resume:
            argv += ["--resume", resume]
        if fork:
            argv.append("--fork-session")
        return with_json(self.run(*argv, *args, **kw), "sessionId")

    def session_dirs(self) -> list[Path]:
        """Every session folder under GROK_HOME/sessions (subagent children too), oldest first."""
        found = [p.parent for p in (self.grok_home / "sessions").glob("*/*/summary.json")]
        return sorted(found, key=lambda p: p.stat().st_mtime_ns)

    def session_dir(self, session_id: str) -> Path:
        return only([p.parent for p in (self.grok_home / "sessions").glob(f"*/{session_id}/summary.json")],
                    f"session folder of {session_id}")

    def updates(self, session_id: str) -> list[dict[str, Any]]:
        return read_jsonl(self.session_dir(session_id) / "updates.jsonl")
