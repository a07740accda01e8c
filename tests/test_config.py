"""Calibration: every tunable constant can be set in one config file, `config show` says where
each value came from, and the value set changes what the command does."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from catty_ctx import defaults
from support import FIXTURES, ROOT, jsonl
from support import forked_process as cli  # a process of its own: the defaults read the config file when they load


def _changed(name: str) -> object:
    value = getattr(defaults, name)
    if isinstance(value, bool):
        raise AssertionError(name)
    if name in defaults.CHOICES:  # another of the values it takes
        return next(c for c in defaults.CHOICES[name] if c != value)
    if name in defaults.SHARES:
        return value / 2
    if name in defaults.PERCENTS:
        return value - 1.5 if value > 50 else value + 1.5
    if isinstance(value, int):
        return value + 7
    if isinstance(value, float):
        return value + 1.5
    if name in defaults.CHOICES:  # a word of a vocabulary: another of its words
        return next(w for w in defaults.CHOICES[name] if w != value)
    return value + "-calibrated"


def _toml(settings: dict[str, object]) -> str:
    return "".join(f"{k.lower()} = {orjson.dumps(v).decode()}\n" for k, v in settings.items())


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    """`config show --json` under a file that changes every tunable constant."""
    path = tmp_path_factory.mktemp("cfg") / "all.toml"
    path.write_text(_toml({n: _changed(n) for n in defaults.TUNABLE}))
    doc = orjson.loads(cli("config", "show", "--json", "--config", str(path), check=True).stdout)
    return path, {row["name"]: row for row in doc["settings"]}


@pytest.mark.parametrize("name", defaults.TUNABLE)
def test_each_constant_is_set_from_the_file_and_shown_with_its_source(shown: tuple[Path, dict[str, dict]], name: str) -> None:
    path, rows = shown
    row = rows[name.lower()]
    assert row["value"] == _changed(name) and row["source"] == str(path)


def test_without_a_file_every_constant_is_its_default() -> None:
    rows = orjson.loads(cli("config", "show", "--json", check=True).stdout)["settings"]
    assert [r["name"] for r in rows] == [n.lower() for n in defaults.TUNABLE]
    assert all(r["source"] == "default" and r["value"] == getattr(defaults, r["name"].upper()) for r in rows)


def test_the_users_config_folder_is_read_and_the_threshold_it_sets_decides_compact_check(tmp_path: Path) -> None:
    s = tmp_path / "demo"
    shutil.copytree(FIXTURES / "sessions" / "demo", s)
    assert cli("compact", str(s), "--check").returncode == 0  # 1.2 % of the window: below 85 %
    folder = tmp_path / "xdg" / "catty-ctx"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text("default_threshold = 1.0\n")
    env_cli = subprocess.run([sys.executable, "-m", "catty_ctx", "compact", str(s), "--check", "--json"], capture_output=True, cwd=ROOT,
                             env={"PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "PATH": ""})
    assert env_cli.returncode == 1 and orjson.loads(env_cli.stdout)["status"] == "over_threshold"


def test_tool_limit_from_the_file_moves_smaller_outputs_to_blobs(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("tool_limit = 1000\n")
    ev = [{"kind": "message", "id": "u1", "role": "user", "text": "go"}, {"kind": "message", "id": "a1", "role": "assistant", "text": ""},
          {"kind": "tool_call", "call_id": "c1", "name": "bash", "args": {}}, {"kind": "tool_result", "call_id": "c1", "output": "x" * 5000, "is_error": False}]
    data = b"".join(orjson.dumps(e) + b"\n" for e in ev)
    for name, extra in (("plain", []), ("tuned", ["--config", str(cfg)])):
        cli("append", str(tmp_path / name), "--create", "-q", *extra, input=data, check=True)
    kept = {name: jsonl((tmp_path / name / "updates.jsonl").read_bytes())[-1] for name in ("plain", "tuned")}
    assert "blob" not in kept["plain"] and kept["tuned"]["blob"] and kept["tuned"]["bytes"] == 5000


def test_compact_mode_from_the_file_is_compacts_default(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('compact_mode = "segments"\n')
    for name, extra in (("plain", []), ("tuned", ["--config", str(cfg)])):
        shutil.copytree(FIXTURES / "sessions" / "demo", tmp_path / name)
        cli("compact", str(tmp_path / name), "--force", *extra, check=True)
    assert not (tmp_path / "plain" / "segments").exists() and (tmp_path / "tuned" / "segments" / "segment_000.md").is_file()


@pytest.mark.parametrize(("content", "problem"), [
    ("bogus = 1\n", b"c.toml:1: unknown setting 'bogus'"),
    ("# team settings\n\ntool_limit = \"big\"\n", b"c.toml:3: tool_limit must be int, not str"),
    ("tool_limit = 20000\ndefault_threshold = [\n", b"c.toml:2: not a readable TOML file"),
    ("tool_limit = 1\n[[[\n", b"c.toml:2: not a readable TOML file"),
    ("tool_limit = 1\ndefault_threshold = 150.0\n", b"c.toml:2: default_threshold = 150.0: must be a percentage"),
])
def test_a_config_file_that_cannot_be_used_stops_every_command_with_one_line(tmp_path: Path, content: str, problem: bytes) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(content)
    proc = cli("inspect", str(FIXTURES / "sessions" / "demo"), "--config", str(cfg))
    assert proc.returncode == 2 and proc.stdout == b"" and problem in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    missing = cli("config", "show", "--config", str(tmp_path / "nope.toml"))
    assert missing.returncode == 2 and b"no such config file" in missing.stderr
