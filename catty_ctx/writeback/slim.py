"""`--max-bytes`: large tool outputs and images leave the copy, a placeholder says where they are.

A tool output over the limit starts with a note naming the command that prints it whole from
the source, then keeps a head and a tail (the blob preview's split, `blobs.preview`); an
image whose data is over the limit is replaced by such a note (`docs/writeback.md`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..session.blobs import preview

Item = dict[str, Any]
Where = Callable[[Item], str]  # an item → where its full text is ("in SRC at seq N: <command>")


def _image_size(img: Any) -> int:
    data = img.get("data") if isinstance(img, dict) else None
    return len(data) if isinstance(data, str) else 0


def slim(items: list[Item], max_bytes: int, where: Where) -> tuple[list[Item], int]:
    """ITEMS with every tool output and image over MAX_BYTES moved out; and how many moved."""
    out: list[Item] = []
    moved = 0
    for it in items:
        role = it.get("role")
        if role == "tool" and isinstance(it.get("output"), str):
            data = it["output"].encode("utf-8")
            if len(data) > max_bytes:
                head, tail, omitted = preview(data, max_bytes, keep_end=False)
                note = (f"[{omitted:,} bytes of this output are not in this copy; the whole output "
                        f"({len(data):,} bytes) is {where(it)}]")
                # The note first: an agent that shortens a long output itself cuts its middle.
                it = {**it, "output": f"{note}\n\n{head}\n[…]\n{tail}"}
                moved += 1
        images = it.get("images")
        if images and any(_image_size(img) > max_bytes for img in images):
            kept = [img for img in images if _image_size(img) <= max_bytes]
            gone = [img for img in images if _image_size(img) > max_bytes]
            notes = [f"[An image ({img.get('media_type') or 'image'}, {_image_size(img) * 3 // 4:,} bytes) is not in this copy; "
                     f"it is {where(it)}]" for img in gone]
            field = "output" if role == "tool" else "text"
            text = it.get(field) or ""
            it = {**it, field: "\n".join(([text] if text else []) + notes)}
            if kept:
                it["images"] = kept
            else:
                it.pop("images", None)
            moved += len(gone)
        out.append(it)
    return out, moved
