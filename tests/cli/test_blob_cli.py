"""`catty-ctx append` externalising large payloads, and `catty-ctx blob` printing them whole."""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from support import cli, jsonl


def _append(session: Path, *events: dict, extra: tuple[str, ...] = ()) -> list[dict]:
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)
    return jsonl(cli("append", str(session), "--create", *extra, input=data, check=True).stdout)


def test_a_1mb_user_message_keeps_its_final_question_in_the_view(tmp_path: Path) -> None:
    s = tmp_path / "s"
    question = "Given all of the above, why does the build fail on ARM only?"
    text = "".join(f"line {i}: nothing to see here\n" for i in range(36_000)) + question
    assert len(text.encode()) > 1_000_000
    ev = _append(s, {"kind": "message", "id": "u1", "role": "user", "text": text})[0]
    assert ev["bytes"] == len(text.encode()) and len(orjson.dumps(ev)) < 25_000
    items = jsonl(cli("inspect", str(s), "--items", check=True).stdout)
    shown = items[0]["item"]
    assert shown["text"].endswith(question) and shown["blob"] == ev["blob"]
    whole = cli("blob", str(s), ev["blob"], check=True).stdout
    assert whole == text.encode()


def test_a_large_tool_output_is_stored_once_per_content(tmp_path: Path) -> None:
    s = tmp_path / "s"
    out = "result row\n" * 10_000
    evs = _append(
        s,
        {"kind": "message", "id": "a", "role": "assistant", "text": ""},
        {"kind": "tool_call", "call_id": "c1", "name": "sh", "args": {}},
        {"kind": "tool_result", "call_id": "c1", "output": out, "is_error": False},
        {"kind": "tool_call", "call_id": "c2", "name": "sh", "args": {}},
        {"kind": "tool_result", "call_id": "c2", "output": out, "is_error": False},
    )
    assert evs[2]["blob"] == evs[4]["blob"] and evs[2]["bytes"] == len(out)
    assert os.listdir(s / "blobs") == [evs[2]["blob"]]
    assert cli("blob", str(s / "updates.jsonl"), evs[2]["blob"], check=True).stdout == out.encode()


def test_limits_are_flags_and_zero_turns_them_off(tmp_path: Path) -> None:
    s = tmp_path / "s"
    evs = _append(s, {"kind": "message", "id": "u", "role": "user", "text": "q" * 30_000}, extra=("--max-user-bytes", "0"))
    assert evs[0]["text"] == "q" * 30_000 and not (s / "blobs").exists()
    evs = _append(s, {"kind": "message", "id": "u2", "role": "user", "text": "q" * 3_000}, extra=("--max-user-bytes", "1000"))
    assert "blob" in evs[0] and len(evs[0]["text"]) < 1_000


def test_blob_refuses_anything_but_a_handle_in_this_session(tmp_path: Path) -> None:
    s = tmp_path / "s"
    ev = _append(s, {"kind": "message", "id": "u", "role": "user", "text": "z" * 30_000})[0]
    (tmp_path / "secret").write_text("outside")
    for bad in ("../secret", str(tmp_path / "secret"), ev["blob"].upper(), ev["blob"][:-1], "0" * 32):
        proc = cli("blob", str(s), bad)
        assert proc.returncode == 2 and proc.stdout == b"" and proc.stderr.count(b"\n") == 1, bad
    link = s / "blobs" / ("f" * 32)
    os.symlink(tmp_path / "secret", link)
    proc = cli("blob", str(s), "f" * 32)
    assert proc.returncode == 65 and b"symbolic link" in proc.stderr and proc.stdout == b""


def test_a_corrupt_blob_is_refused(tmp_path: Path) -> None:
    s = tmp_path / "s"
    ev = _append(s, {"kind": "message", "id": "u", "role": "user", "text": "z" * 30_000})[0]
    (s / "blobs" / ev["blob"]).write_bytes(b"tampered")
    proc = cli("blob", str(s), ev["blob"])
    assert proc.returncode == 65 and b"corrupt" in proc.stderr and proc.stdout == b""


def test_blob_needs_a_session_directory(tmp_path: Path) -> None:
    proc = cli("blob", "-", "0" * 32)
    assert proc.returncode == 2
    proc = cli("blob", str(tmp_path / "missing"), "0" * 32)
    assert proc.returncode == 2 and b"no such session" in proc.stderr


def test_blob_starts_without_typer_and_both_parsers_agree(tmp_path: Path) -> None:
    """`blob` parses its two arguments itself (cli/fastpath.py); anything else goes to typer, with the same answers."""

    from catty_ctx.cli.blob import parse_args
    from support import both_parsers, plain_run

    s = tmp_path / "s"
    ev = _append(s, {"kind": "message", "id": "u1", "role": "user", "text": "x" * 100_000})[0]
    assert parse_args([str(s), ev["blob"]]) == {"session": str(s), "handle": ev["blob"]}
    for typer_says in ([str(s)], [str(s), ev["blob"], "extra"], ["--help"], [str(s), "--bogus", ev["blob"]]):
        assert parse_args(typer_says) is None, typer_says
    for args in ([str(s), ev["blob"]], [str(s), "0" * 32], [str(s), "../etc/passwd"], [str(tmp_path / "missing"), ev["blob"]]):
        both_parsers("blob", *args)
    status, loaded, proc = plain_run("blob", str(s), ev["blob"])
    assert (status, loaded, proc.stderr.strip()) == (0, [], b"") and proc.stdout == b"x" * 100_000
