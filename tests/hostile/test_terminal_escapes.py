"""Nothing from a session, a path or a file drives the terminal: escapes, C1 controls, DEL and
bidi controls are shown (pictures or \\u escapes), in `segment show`, `blob`, JSON, tables and
warnings. Commands run under a real pseudo-terminal; in a pipe the bytes stay exact."""
from __future__ import annotations

from pathlib import Path

import orjson
from support import cli, cli_on_a_terminal, jsonl

# OSC 52 clipboard write, OSC 8 link, title, screen clear, carriage return, BEL, C1 CSI and OSC,
# NEL, DEL, bidi override and isolate.
HOSTILE = ("\x1b]52;c;cm0gLXJmIH4=\x07 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b]0;title\x07 \x1b[2J\r"
           "\x07 \u009b31m \u009d0;t\u009c \u0085 \x7f \u202egnp.exe \u2066x\u2069")
RAW = ("\x1b", "\x07", "\r", "\u009b", "\u009d", "\u0085", "\x7f", "\u202e", "\u2066")


def on_a_terminal(*args: str, stream: str = "stdout", cwd: Path | None = None) -> tuple[int, bytes, bytes]:
    """Run catty-ctx with STREAM on a pseudo-terminal in raw mode (no newline translation):
    (exit code, what the terminal got, the other stream)."""
    code, other, shown = cli_on_a_terminal(*args, stream=stream, columns=120, raw=True, cwd=cwd)
    return code, shown, other


def _clean(shown: bytes) -> None:
    text = shown.decode()
    assert not [c for c in RAW if c in text], [hex(ord(c)) for c in RAW if c in text]


def _append(session: Path, *events: dict) -> list[dict]:
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)
    return jsonl(cli("append", str(session), "--create", input=data, check=True).stdout)


def test_blob_on_a_terminal_shows_controls_and_raw_or_a_pipe_gives_the_bytes(tmp_path: Path) -> None:
    s = tmp_path / "s"
    payload = (HOSTILE + "\n") * 3000
    ev = _append(s, {"kind": "message", "id": "u1", "role": "user", "text": payload})[0]
    code, shown, _ = on_a_terminal("blob", str(s), ev["blob"])
    assert code == 0 and b"\xe2\x90\x9b]52;c;" in shown and b"\\u009b31m" in shown and b"\\u202egnp.exe" in shown  # U+241B for ESC
    _clean(shown)
    code, raw, _ = on_a_terminal("blob", str(s), ev["blob"], "--raw")
    assert code == 0 and raw == payload.encode()
    assert cli("blob", str(s), ev["blob"], check=True).stdout == payload.encode()


def test_segment_show_on_a_terminal_shows_controls(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _append(s, {"kind": "message", "id": "u1", "role": "user", "text": "Do this: " + HOSTILE},
            {"kind": "message", "id": "a1", "role": "assistant", "text": "Done " + HOSTILE})
    cli("compact", str(s), "--force", "--mode", "segments", check=True)
    code, shown, err = on_a_terminal("segment", "show", str(s), "0")
    assert code == 0, err
    assert b"\\u202egnp.exe" in shown
    _clean(shown)
    assert "\u202egnp.exe".encode() in cli("segment", "show", str(s), "0", check=True).stdout  # a pipe: exact


def test_json_on_a_terminal_escapes_c1_del_nel_and_bidi_and_reads_back_the_same(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _append(s, {"kind": "message", "id": "u1", "role": "user", "text": HOSTILE})
    code, shown, err = on_a_terminal("inspect", str(s), "--items", "--json")
    assert code == 0, err
    _clean(shown)
    piped = cli("inspect", str(s), "--items", "--json", check=True).stdout
    assert orjson.loads(shown) == orjson.loads(piped) and "\u202egnp.exe" in piped.decode()  # a pipe: exact


def test_a_table_shows_bidi_controls_and_escapes_of_a_path(tmp_path: Path) -> None:
    root = tmp_path / "root"
    s = root / "evil\u202egnp.\x1b]0;x\x07"
    _append(s, {"kind": "message", "id": "u1", "role": "user", "text": "hi"})
    code, shown, err = on_a_terminal("inspect", "root", cwd=tmp_path)  # relative: the path fits its cell, however long the temporary folder
    assert code == 0, err
    assert b"\\u202egnp." in shown
    _clean(shown)


def test_the_torn_line_warning_shows_the_escape_of_its_path(tmp_path: Path) -> None:
    s = tmp_path / "bad\x1b]0;owned\x07\u202e"
    _append(s, {"kind": "message", "id": "u1", "role": "user", "text": "hi"})
    with open(s / "updates.jsonl", "ab") as f:
        f.write(b'{"kind": "message", "te')  # torn: no newline
    code, shown, _ = on_a_terminal("inspect", str(s), stream="stderr")
    assert b"torn" in shown and b"\xe2\x90\x9b]0;owned" in shown  # the path, its ESC as U+241B
    _clean(shown)
    piped = cli("inspect", str(s))
    assert b"torn" in piped.stderr and b"\x1b" not in piped.stderr  # a warning is sanitised in a pipe too


def test_imported_events_on_a_terminal_show_controls_and_a_pipe_gets_them_exact(tmp_path: Path) -> None:
    transcript = tmp_path / "claude.jsonl"
    records = [{"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": "2026-03-01T10:00:00Z",
                "message": {"role": "user", "content": HOSTILE}},
               {"type": "assistant", "sessionId": "s1", "uuid": "u2", "parentUuid": "u1", "timestamp": "2026-03-01T10:00:01Z",
                "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "ok"}]}}]
    transcript.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    code, shown, err = on_a_terminal("import", "claude", str(transcript))
    assert code == 0, err
    _clean(shown)
    piped = cli("import", "claude", str(transcript), check=True).stdout
    assert [orjson.loads(line) for line in shown.splitlines()] == jsonl(piped)  # the same events, escaped
    assert "\u202egnp.exe" in piped.decode()
