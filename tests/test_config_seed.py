"""Every constant of docs/design.md's table (the seed's) is calibratable: `config show` lists each
with its source, a value out of range stops with one line, and setting each changes what the
command does (one test per constant; the prune and blob ones are in test_config.py and the
prune suite, the threshold and the summary floor in the compact suite)."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from catty_ctx import defaults
from support import ROOT, msg, session_event, write_log
from support import forked_process as cli  # a process of its own: the defaults read the config file when they load

TABLE_KEY = re.compile(r"^\| [^|]+ \| [^|]+ \| `([a-z0-9_]+)` \|$", re.M)


def _keys() -> list[str]:
    return TABLE_KEY.findall((ROOT / "docs" / "design.md").read_text())


def _config(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / f"c{abs(hash(text))}.toml"
    path.write_text(text)
    return ["--config", str(path)]


def _json(*args: str) -> Any:
    return orjson.loads(cli(*args, "--json", check=True).stdout)


def test_config_show_lists_every_constant_of_the_design_table_with_its_source(tmp_path: Path) -> None:
    keys = _keys()
    assert len(keys) == 28 and len(set(keys)) == 28
    rows = {r["name"]: r for r in _json("config", "show")["settings"]}
    assert all(rows[k]["source"] == "default" for k in keys), [k for k in keys if k not in rows]
    tuned = {r["name"]: r for r in _json("config", "show", *_config(tmp_path, "".join(f"{k} = {_other(k)}\n" for k in keys)))["settings"]}
    assert all(tuned[k]["source"].endswith(".toml") for k in keys)


def _other(key: str) -> str:
    value = getattr(defaults, key.upper())
    if key.upper() in defaults.SHARES:
        return repr(value / 2)
    if key.upper() in defaults.PERCENTS:
        return repr(value - 1.0)
    return repr(value + 1)


@pytest.mark.parametrize(("text", "problem"), [
    ("prefire_split = 1.5\n", "prefire_split = 1.5: must be a share of 1"),
    ("bytes_per_token = 0\n", "bytes_per_token = 0: must be at least 1"),
    ("fitted_reserve = -1\n", "fitted_reserve = -1: must not be negative"),
    ("default_threshold = 140.0\n", "default_threshold = 140.0: must be a percentage"),
    ('compact_mode = "everything"\n', "compact_mode = 'everything': must be one of summary, transcript, segments"),
])
def test_a_value_out_of_range_stops_with_one_line(tmp_path: Path, text: str, problem: str) -> None:
    proc = cli("config", "show", *_config(tmp_path, text))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"" and problem in err and len(err.splitlines()) == 1, err
    assert ".toml:1: " in err  # the file and the line of the key


# -- one behaviour per constant ------------------------------------------------------------------


def _talk(path: Path, window: int, turns: int = 12, size: int = 400) -> Path:
    events: list[dict[str, Any]] = [session_event(window=window), msg("system", "sys")]
    for i in range(turns):
        events += [msg("user", f"turn {i}: parse_config_{i} fails " + "u" * size, f"u{i}"), msg("assistant", f"step {i} " + "a" * size, f"a{i}")]
    return write_log(path, events)


def _tokens(s: Path, *config: str) -> int:
    return int(_json("inspect", str(s), *config)["tokens"])


def test_bytes_per_token_and_image_tokens_change_the_estimate(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "x" * 4000, "u1", images=[{"media_type": "image/png", "data": "AAAA"}])])
    plain = _tokens(s)
    assert _tokens(s, *_config(tmp_path, "bytes_per_token = 2\n")) - 765 == 2 * (plain - 765)
    assert _tokens(s, *_config(tmp_path, "image_tokens = 1000\n")) == plain + 235


def test_prefire_split_moves_where_pass_1_cuts(tmp_path: Path) -> None:
    s = _talk(tmp_path / "s", 200_000)
    plain = _json("compact", str(s), "--prefire", "--dry-run")["prefix_len"]
    half = _json("compact", str(s), "--prefire", "--dry-run", *_config(tmp_path, "prefire_split = 0.5\n"))["prefix_len"]
    assert plain > 20 and 10 <= half <= 14


def test_fitted_reserve_decides_whether_a_small_window_may_prefire(tmp_path: Path) -> None:
    s = _talk(tmp_path / "s", 28_000)
    assert cli("compact", str(s), "--prefire", "--dry-run").returncode == 65
    assert _json("compact", str(s), "--prefire", "--dry-run", *_config(tmp_path, "fitted_reserve = 8000\n"))["status"] == "would_prefire"


def test_prefire_lead_sets_where_a_roots_prefire_starts(tmp_path: Path) -> None:
    probe = _talk(tmp_path / "probe", 400_000, size=20_000)
    t = _tokens(probe)
    _talk(tmp_path / "root" / "at80", int(t * 100 / 80), size=20_000)
    assert [r["status"] for r in _json("compact", str(tmp_path / "root"), "--prefire", "--dry-run")["sessions"]] == ["would_prefire"]
    tuned = _json("compact", str(tmp_path / "root"), "--prefire", "--dry-run", *_config(tmp_path, "prefire_lead = 2.0\n"))
    assert [r["status"] for r in tuned["sessions"]] == ["below_threshold"]


def _note(s: Path) -> str:
    return str(orjson.loads((s / "compaction_requests" / "prefire.json").read_bytes())["note1"])


def test_note1_cap_cuts_the_cached_note(tmp_path: Path) -> None:
    a, b = _talk(tmp_path / "a", 200_000), _talk(tmp_path / "b", 200_000)
    cli("compact", str(a), "--prefire", check=True)
    cli("compact", str(b), "--prefire", *_config(tmp_path, "note1_cap = 600\n"), check=True)
    assert len(_note(a)) > 600 and len(_note(b)) == 600


def test_note1_min_block_decides_whether_a_summary_block_is_the_note(tmp_path: Path) -> None:
    script = tmp_path / "summ.py"
    script.write_text("import sys\nsys.stdin.read()\nprint('<analysis>thinking</analysis><summary>' + 'kept ' * 160 + '</summary>')\n")
    spec = f"cmd:{sys.executable} {script}"
    a, b = _talk(tmp_path / "a", 200_000), _talk(tmp_path / "b", 200_000)
    cli("compact", str(a), "--prefire", "--summarizer", spec, check=True)
    cli("compact", str(b), "--prefire", "--summarizer", spec, *_config(tmp_path, "note1_min_block = 500\n"), check=True)
    assert "<analysis>" in _note(a) and _note(b).startswith("kept")  # an 800-character block: under 1,000, over 500


def _attempts(s: Path) -> list[dict[str, Any]]:
    (art,) = [p for p in (s / "compaction_requests").glob("*.json") if not p.name.startswith("prefire")]
    return orjson.loads(art.read_bytes())["attempts"]  # type: ignore[no-any-return]


def test_attempts_per_stage_and_retry_backoff_bound_the_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "busy.py"
    script.write_text("import sys\nsys.stdin.read()\nsys.exit(75)\n")  # temporarily unavailable, every time
    spec = f"cmd:{sys.executable} {script}"
    monkeypatch.delenv("CATTY_CTX_RETRY_BACKOFF", raising=False)
    a, b = _talk(tmp_path / "a", 200_000, turns=3), _talk(tmp_path / "b", 200_000, turns=3)
    cfg = _config(tmp_path, "retry_backoff = 0.0\n")
    assert cli("compact", str(a), "--force", "--summarizer", spec, *cfg).returncode == 75
    assert cli("compact", str(b), "--force", "--summarizer", spec, *_config(tmp_path, "retry_backoff = 0.0\nattempts_per_stage = 1\n")).returncode == 75
    assert (len(_attempts(a)), len(_attempts(b))) == (3, 1)


def test_lossy_fraction_sets_the_lossy_stages_budget(tmp_path: Path) -> None:
    script = tmp_path / "small.py"  # overflows on any prompt over 70 KB: only the lossy stage fits
    script.write_text("import sys\nif len(sys.stdin.read()) > 70_000:\n    sys.exit(3)\nprint('<summary>' + 'ok ' * 400 + '</summary>')\n")
    spec = f"cmd:{sys.executable} {script}"
    # (a 20,000-token window: the fitted stage has no room beside its reserve and is skipped)
    a, b = _talk(tmp_path / "a", 20_000, turns=40, size=1500), _talk(tmp_path / "b", 20_000, turns=40, size=1500)
    cli("compact", str(a), "--force", "--summarizer", spec, check=True)
    cli("compact", str(b), "--force", "--summarizer", spec, *_config(tmp_path, "lossy_fraction = 0.3\n"), check=True)
    lossy = [[t for t in _attempts(s) if t["stage"] == "lossy"][-1]["input_items"] for s in (a, b)]
    assert lossy[0] > lossy[1] > 0


def _segments(tmp_path: Path, name: str, *config: str) -> dict[str, Any]:
    s = _talk(tmp_path / name, 200_000, turns=20, size=3000)
    cli("compact", str(s), "--force", "--mode", "segments", *config, check=True)
    (seg,) = orjson.loads((s / "segments" / "index.json").read_bytes())["segments"]
    return {**seg, "size": (s / "segments" / seg["file"]).stat().st_size}


def test_segment_cap_and_segment_keywords_shape_the_archive(tmp_path: Path) -> None:
    plain = _segments(tmp_path, "a")
    tuned = _segments(tmp_path, "b", *_config(tmp_path, "segment_cap = 20000\nsegment_keywords = 2\n"))
    assert plain["size"] > 100_000 and not plain["truncated"] and len(plain["keywords"]) > 2
    assert tuned["size"] < plain["size"] - 60_000 and tuned["truncated"] and len(tuned["keywords"]) <= 2  # (the cap is on the turns)


def _listing(tmp_path: Path, *config: str) -> str:
    skills = [{"name": f"skill-{i}", "description": f"does thing {i} " + "d" * 900, "path": f"/s/{i}"} for i in range(30)]
    s = write_log(tmp_path / f"s{len(config)}{abs(hash(config))}", [session_event(window=200_000), msg("system", "sys"),
                                                                     {"kind": "state", "facet": "skills", "value": skills}, msg("user", "go", "u1")])
    items = _json("inspect", str(s), "--items", *config)["items"]
    return next(str(it["item"]["text"]) for it in items if "skill-0" in str(it["item"].get("text")))


def test_description_limit_and_announce_share_bound_the_skills_listing(tmp_path: Path) -> None:
    plain = _listing(tmp_path)
    short = _listing(tmp_path, *_config(tmp_path, "description_limit = 100\n"))
    small = _listing(tmp_path, *_config(tmp_path, "announce_share = 0.002\n"))
    longest = max(len(line) for line in plain.splitlines() if line.startswith("- skill-"))
    assert longest > 300 and max(len(line) for line in short.splitlines() if line.startswith("- skill-")) < 130
    assert len(small) < len(plain) and len(small.encode()) <= 200_000 * 0.002 * 4 + 200
