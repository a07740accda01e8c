"""Images end to end, on an imported Claude Code session with screenshots: each image counts
765 tokens wherever it is (a user message or a tool result), an image kept as a blob weighs
its bytes in prune's 47 → 25 MiB eviction, and resume sends it as a provider image block."""
from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import orjson

from catty_ctx.view import providers
from catty_ctx.view.fingerprint import canonical
from catty_ctx.session.store import Session
from catty_ctx.view.fold import stream_view
from support import cli, jsonl

PNG_HEAD = b"\x89PNG\r\n\x1a\n"


def screenshot(n: int, size: int) -> bytes:
    """A distinct payload of `size` bytes (its content is opaque to every command)."""
    return PNG_HEAD + n.to_bytes(4, "big") + os.urandom(size - len(PNG_HEAD) - 4)


def _line(kind: str, uuid: str, parent: str | None, ts: int, message: dict[str, Any]) -> bytes:
    return orjson.dumps({
        "parentUuid": parent, "isSidechain": False, "type": kind, "sessionId": "shots", "cwd": "/home/dev/app",
        "uuid": uuid, "timestamp": f"2026-10-01T09:{ts // 60:02d}:{ts % 60:02d}.000Z", "message": message,
    }) + b"\n"


def _img(data: bytes) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(data).decode()}}


def claude_session(path: Path, turns: int, size: int) -> tuple[Path, list[bytes]]:
    """Each turn: the user pastes a screenshot, the assistant takes one with a tool; a turn
    holds 2 images of `size` bytes. Returns the file and the images in order."""
    lines, shots, parent, t = [], [], None, 0
    for i in range(turns):
        pasted, taken = screenshot(2 * i, size), screenshot(2 * i + 1, size)
        shots += [pasted, taken]
        u, a, r = f"u{i}", f"a{i}", f"r{i}"
        lines.append(_line("user", u, parent, t, {"role": "user", "content": [{"type": "text", "text": f"look at screen {i}"}, _img(pasted)]}))
        lines.append(_line("assistant", a, u, t + 1, {"model": "claude-sonnet-4-5", "id": f"msg{i}", "role": "assistant", "content": [
            {"type": "text", "text": "taking a screenshot"}, {"type": "tool_use", "id": f"shot{i}", "name": "screenshot", "input": {}}]}))
        lines.append(_line("user", r, a, t + 2, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"shot{i}", "content": [{"type": "text", "text": "captured"}, _img(taken)]}]}))
        parent, t = r, t + 3
    path.write_bytes(b"".join(lines))
    return path, shots


def imported(tmp_path: Path, turns: int, size: int) -> tuple[Path, list[bytes]]:
    src, shots = claude_session(tmp_path / "shots.jsonl", turns, size)
    out = tmp_path / "s"
    cli("import", "claude", str(src), "--out", str(out), check=True)
    return out, shots


def test_every_image_counts_765_tokens_in_a_user_message_and_in_a_tool_result(tmp_path: Path) -> None:
    s, _ = imported(tmp_path, 2, 4096)
    items = list(stream_view(Session.open(s)))
    with_images = [vi for vi in items if vi.item.get("images")]
    assert sorted(vi.item["role"] for vi in with_images) == ["tool", "tool", "user", "user"]
    for vi in with_images:
        rest = {k: v for k, v in vi.item.items() if k != "images"}
        assert vi.tokens == len(canonical(rest)) // 4 + 765 * len(vi.item["images"])


def test_prune_evicts_blob_images_oldest_first_with_hysteresis(tmp_path: Path) -> None:
    """24 images of 60 KiB kept as blobs: ~1.9 MiB of base64 in a request. With the marks at
    1.5 and 0.8 MiB (the 47/25 MiB rule, scaled) the oldest go until the body is at most the
    low mark; the blobs' few handle bytes alone would never reach the high mark."""
    s, _ = imported(tmp_path, 12, 60 * 1024)
    assert len(os.listdir(s / "blobs")) == 24
    proc = cli("prune", str(s), "--image-high", "1.5", "--image-low", "0.8", "--stats", check=True)
    items = jsonl(proc.stdout)
    stats = orjson.loads(proc.stderr.splitlines()[-1])["stats"]
    per_image = 4 * ((60 * 1024 + 2) // 3)
    kept = sum(len(it.get("images", ())) for it in items)
    assert stats["images_removed"] == 24 - kept and 0 < stats["images_removed"] < 24
    # Replayed item by item: when the body reached the high mark, the oldest went until it was
    # at most the low mark; the images after that batch stay while the body is under the high one.
    assert kept * per_image < 1.5 * (1 << 20)
    n_high = int(1.5 * (1 << 20)) // per_image + 1  # images in the body when it first crossed
    assert stats["images_removed"] >= n_high - int(0.8 * (1 << 20)) // per_image
    removed_in = [it for it in items if "An earlier image was removed" in (it.get("text") or it.get("output") or "")]
    assert removed_in[0]["seq"] < min(it["seq"] for it in items if it.get("images"))  # oldest first
    assert {it["role"] for it in removed_in} == {"user", "tool"}  # screenshots of tools too
    for build, validate in providers.FORMATS.values():
        validate(build(items))


def test_resume_sends_blob_images_as_provider_image_blocks(tmp_path: Path) -> None:
    s, shots = imported(tmp_path, 1, 2048)
    pasted, taken = (base64.b64encode(x).decode() for x in shots)
    doc = orjson.loads(cli("resume", str(s), "--format", "openai", check=True).stdout)
    parts = [p for m in doc["messages"] if isinstance(m["content"], list) for p in m["content"]]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert urls == [f"data:image/png;base64,{pasted}", f"data:image/png;base64,{taken}"]
    assert not any("[image" in (p.get("text") or "") for p in parts)
    tool_at = next(i for i, m in enumerate(doc["messages"]) if m["role"] == "tool")
    assert doc["messages"][tool_at + 1]["role"] == "user" and "shot0" in doc["messages"][tool_at + 1]["content"][0]["text"]

    doc = orjson.loads(cli("resume", str(s), "--format", "anthropic", check=True).stdout)
    blocks = [b for m in doc["messages"] for b in m["content"]]
    nested = [c for b in blocks if b["type"] == "tool_result" and isinstance(b["content"], list) for c in b["content"]]
    sources = [b["source"] for b in blocks + nested if b["type"] == "image"]
    assert sources == [{"type": "base64", "media_type": "image/png", "data": pasted}, {"type": "base64", "media_type": "image/png", "data": taken}]


def test_resume_says_when_a_blob_image_is_missing(tmp_path: Path) -> None:
    s, _ = imported(tmp_path, 1, 2048)
    victim = sorted((s / "blobs").iterdir())[0]
    victim.unlink()
    proc = cli("resume", str(s), "--format", "anthropic", check=True)
    assert b"1 image missing or corrupt" in proc.stderr
    providers.validate_anthropic(orjson.loads(proc.stdout))


def test_the_summariser_transcript_marks_the_images_of_messages_and_tool_results(tmp_path: Path) -> None:
    from catty_ctx.compact.ladder import render_transcript

    s, _ = imported(tmp_path, 1, 1024)
    text = render_transcript([vi.item for vi in stream_view(Session.open(s))])
    assert "look at screen 0 [image]" in text and "captured [image]" in text
