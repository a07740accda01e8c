"""Hostile data at the edges: time stamps at the calendar's ends and corrupt opencode databases
are data, never a crash (issue 29: "a year-9999 timestamp under `usage --since` or `--by day` in a
non-UTC zone", "a corrupt `opencode.db`"; docs/reliability.md "Validation")."""
from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import orjson
import pytest
from support import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SCHEMA = FIXTURES / "import" / "opencode" / "opencode-db.sql"
STAMPS = ["2026-03-01T10:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999+14:00", "0001-01-01T00:00:00Z"]


def _claude_home(tmp_path: Path) -> Path:
    home = tmp_path / "claude"
    project = home / "projects" / "-home-user-p"
    project.mkdir(parents=True)
    records = [{"type": "assistant", "sessionId": "s1", "uuid": f"u{i}", "timestamp": ts, "requestId": f"r{i}",
                "message": {"id": f"m{i}", "model": "claude-sonnet-4-5-20250929", "role": "assistant",
                            "content": [{"type": "text", "text": "x"}], "usage": {"input_tokens": 10, "output_tokens": 5}}}
               for i, ts in enumerate(STAMPS)]
    (project / "s1.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return home


# Kiritimati is UTC+14: the last second of 9999 is already year 10000 there; Los Angeles is
# behind UTC: the first second of year 1 is year 0 there. Neither day exists in the calendar.
@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "America/Los_Angeles"])
@pytest.mark.parametrize("by", ["day", "week", "month"])
def test_stamps_at_the_calendars_ends_are_counted_in_any_zone(tmp_path: Path, zone: str, by: str) -> None:
    home = _claude_home(tmp_path)
    proc = cli("usage", str(home), "--by", by, "--timezone", zone, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(proc.stdout)
    assert doc["totals"]["calls"] == len(STAMPS)
    assert sum(row["calls"] for row in doc["rows"]) == len(STAMPS)


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "America/Los_Angeles"])
def test_since_and_until_over_stamps_at_the_calendars_ends(tmp_path: Path, zone: str) -> None:
    home = _claude_home(tmp_path)
    since = cli("usage", str(home), "--since", "2026-01-01", "--timezone", zone, "--json")
    assert since.returncode == 0, since.stderr
    assert orjson.loads(since.stdout)["totals"]["calls"] == 3  # 2026 and the two in 9999 (the year-1 one is before)
    until = cli("usage", str(home), "--until", "9999-12-31", "--by", "day", "--timezone", zone, "--json")
    assert until.returncode == 0, until.stderr
    assert orjson.loads(until.stdout)["totals"]["calls"] == len(STAMPS)


def _database(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(SCHEMA.read_text())
    con.commit()
    con.close()
    return path


def _corrupt_copies(tmp_path: Path, count: int) -> list[Path]:
    """COUNT copies of a good database, each with a few random bytes overwritten (seeded)."""
    good = _database(tmp_path / "good" / "opencode.db").read_bytes()
    rng = random.Random(29)
    out = []
    for i in range(count):
        data = bytearray(good)
        for _ in range(rng.randint(1, 30)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        f = tmp_path / f"c{i}" / "opencode.db"
        f.parent.mkdir()
        f.write_bytes(bytes(data))
        out.append(f)
    return out


def _updated(folder: Path, *statements: str) -> Path:
    """A good database in FOLDER with STATEMENTS run on it."""
    db = _database(folder / "opencode.db")
    con = sqlite3.connect(db)
    for sql in statements:
        con.execute(sql)
    con.commit()
    con.close()
    return db


def _not_utf8_cell(tmp_path: Path) -> Path:
    return _updated(tmp_path / "cell", "UPDATE session SET title = CAST(X'46697820ff0a' AS TEXT)",
                    "UPDATE part SET data = CAST(X'7b2274797065223a2274657874222c2274657874223a22ff227d' AS TEXT) WHERE id = 'prt_a1'")


def _not_utf8_session_id(tmp_path: Path) -> Path:
    return _updated(tmp_path / "sid", "UPDATE session SET id = CAST(X'7365735fff' AS TEXT)")


def _schema_error_not_utf8(tmp_path: Path) -> Path:
    """A schema broken where sqlite3's own error message quotes the bad byte ("near "NUL\\x96"")."""
    db = _database(tmp_path / "keyword" / "opencode.db")
    data = db.read_bytes()
    at = data.index(b"NOT NULL")
    db.write_bytes(data[:at + 7] + b"\x96" + data[at + 8:])
    return db


def _not_utf8_schema(tmp_path: Path) -> Path:
    """A database whose schema text (a column name) holds a byte that is not UTF-8: sqlite3 decodes
    column names itself, whatever the connection's text factory."""
    db = _database(tmp_path / "schema" / "opencode.db")
    data = db.read_bytes()
    at = data.index(b"project_id TEXT")
    db.write_bytes(data[:at] + b"\xaa" + data[at + 1:])
    return db


def _outcome(*args: str) -> tuple[int, bytes]:
    proc = cli(*args)
    return proc.returncode, proc.stderr


def test_random_corruptions_of_an_opencode_database_are_data_errors_or_read(tmp_path: Path) -> None:
    codes = set()
    for db in _corrupt_copies(tmp_path, 40):
        for args in (("import", "auto", str(db)), ("usage", str(db), "--json")):
            code, err = _outcome(*args)
            codes.add(code)
            assert code in (0, 65), (db, args, err)
            assert b"internal error" not in err and b"Traceback" not in err, (db, args, err)
            assert err.count(b"\n") <= 3, err
    assert 65 in codes  # (the seeded corruptions do break some databases: the test is about those)


def test_a_cell_that_is_not_utf8_is_kept_as_u_fffd(tmp_path: Path) -> None:
    db = _not_utf8_cell(tmp_path)
    proc = cli("import", "auto", str(db))
    assert proc.returncode == 0, proc.stderr
    assert "\ufffd" in proc.stdout.decode()
    assert cli("usage", str(db), "--json").returncode == 0


def test_a_schema_that_is_not_utf8_is_a_data_error_naming_the_file(tmp_path: Path) -> None:
    db = _not_utf8_schema(tmp_path)
    proc = cli("import", "auto", str(db))
    assert proc.returncode == 65, proc.stderr
    assert str(db).encode() in proc.stderr and b"internal error" not in proc.stderr
    usage = cli("usage", str(db), "--json")
    assert usage.returncode in (0, 65) and b"internal error" not in usage.stderr, usage.stderr


def test_a_root_holding_corrupt_databases_is_walked_without_a_crash(tmp_path: Path) -> None:
    # (a ROOT walk reads each database's session ids before any import: the same bytes reach it)
    root = tmp_path / "root"
    for i, db in enumerate([*_corrupt_copies(tmp_path / "copies", 20), _not_utf8_cell(tmp_path), _not_utf8_schema(tmp_path),
                                  _not_utf8_session_id(tmp_path), _schema_error_not_utf8(tmp_path)]):
        (root / f"d{i}").mkdir(parents=True)
        db.rename(root / f"d{i}" / "opencode.db")
    for args in (("inspect", str(root), "--json"), ("repair", str(root), "--check"), ("search", str(root), "Fix"),
                 ("usage", str(root), "--json", "--allow-empty")):
        proc = cli(*args)
        assert proc.returncode in (0, 1, 2, 65), (args, proc.stderr)
        assert b"internal error" not in proc.stderr and b"Traceback" not in proc.stderr, (args, proc.stderr)


def test_usage_names_a_database_it_cannot_read_and_reads_one_under_another_name(tmp_path: Path) -> None:
    good = _database(tmp_path / "good" / "opencode.db")
    renamed = tmp_path / "backup.sqlite"
    renamed.write_bytes(good.read_bytes())
    counted = orjson.loads(cli("usage", str(renamed), "--json", "--no-cache").stdout)
    assert counted["totals"]["calls"] == orjson.loads(cli("usage", str(good), "--json", "--no-cache").stdout)["totals"]["calls"] > 0
    junk = tmp_path / "junk" / "opencode.db"
    junk.parent.mkdir()
    junk.write_bytes(good.read_bytes()[:100] + b"\xff" * (len(good.read_bytes()) - 100))
    proc = cli("usage", str(junk), "--no-cache")
    assert b"internal error" not in proc.stderr
    assert str(junk).encode() in proc.stderr and b"cannot read the database" in proc.stderr, proc.stderr
