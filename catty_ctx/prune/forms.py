"""The rewritten forms of pruned items, and what each item weighs (pass 1)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..view.fingerprint import canonical
from ..view.fold import Item, ViewItem
from ..view.tokens import item_tokens, size_tokens
from .options import PruneOptions

BlobSize = Callable[[str], "int | None"]  # a blob handle -> its size in bytes (None: unknown)


# -- the rewritten forms -------------------------------------------------------------------


def _where(seq: Any, ref: str) -> str:
    """How to get the original back: its seq and the command that prints it."""
    if isinstance(seq, int):
        return f"original: seq {seq}, print it with `catty-ctx inspect {ref} --seq {seq}`"
    return "original: a synthetic item, not in the log"


def placeholder_item(item: Item, reason: str, ref: str) -> Item:
    """A tool result whose output is replaced by a note that says how to get it back."""
    out = dict(item)
    n = len(item.get("output", ""))
    out["output"] = f"[tool result {reason} by catty-ctx prune ({n:,} characters); {_where(item.get('seq'), ref)}]"
    out.pop("images", None)
    out["pruned"] = "omitted"
    return out


def trimmed_item(item: Item, head: int, tail: int, ref: str) -> Item:
    """A tool result that keeps its first `head` and last `tail` characters around a marker."""
    text = item["output"]
    cut = len(text) - head - tail
    out = dict(item)
    out["output"] = (
        text[:head]
        + f"\n[… {cut:,} characters trimmed by catty-ctx prune; {_where(item.get('seq'), ref)} …]\n"
        + (text[-tail:] if tail else "")
    )
    out["pruned"] = "trimmed"
    return out


def cleared_args(seq: Any, ref: str) -> dict[str, str]:
    return {"cleared": f"arguments cleared by catty-ctx prune; {_where(seq, ref)}"}


def images_removed_item(item: Item, count: int, ref: str) -> Item:
    """An item whose `count` oldest images are replaced by a note in its text (a user
    message) or its output (a tool result: a screenshot tool's, say)."""
    out = dict(item)
    rest = item["images"][count:]
    if rest:
        out["images"] = rest
    else:
        out.pop("images")
    noun = "image was" if count == 1 else f"{count} images were"
    field = "output" if item.get("role") == "tool" else "text"
    out[field] = (
        item.get(field, "")
        + f"\n[An earlier {noun} removed from this request by catty-ctx prune; do not describe "
        + f"{'it' if count == 1 else 'them'}; {_where(item.get('seq'), ref)}]"
    )
    return out


def image_bytes(img: Any, blob_size: BlobSize | None) -> int:
    """What an image adds to the request body: its entry as stored, and for an image kept as
    a blob (imports store them so) the base64 text a provider request will carry in its place."""
    n = len(canonical(img))
    if isinstance(img, dict) and "data" not in img and isinstance(img.get("blob"), str) and blob_size is not None:
        size = blob_size(img["blob"])
        if size:
            n += 4 * ((size + 2) // 3)
    return n


# -- pass 1: what each item weighs -----------------------------------------------------------


class Meta:
    """The few facts about one item that the strategies decide on (the item itself is not kept)."""

    __slots__ = ("args_saves", "body", "call_ids", "chars", "images", "omit_saves", "real_user", "result", "tokens", "tool", "trim_saves")

    def __init__(self) -> None:
        self.tokens = 0
        self.real_user = False
        self.result = False
        self.tool = ""
        self.chars = 0
        self.omit_saves = 0
        self.trim_saves = 0
        self.call_ids: tuple[str, ...] = ()
        self.args_saves: dict[str, int] = {}
        self.body = 0
        self.images: list[int] = []


def omit_reason(opts: PruneOptions) -> str:
    if opts.strategy == "tiered":
        return f"omitted (older than {opts.omit_age} turns)"
    return "cleared to keep the request within the window"


def describe(vi: ViewItem, opts: PruneOptions, names: dict[str, str], call_seqs: dict[str, int], blob_size: BlobSize | None = None) -> Meta:
    """Measure an item and its rewritten forms; `names` maps call ids to tool names as calls pass."""
    item = vi.item
    m = Meta()
    m.tokens = vi.tokens
    m.body = len(vi.canon)
    role = item.get("role")
    ref = opts.session_ref
    imgs = item.get("images")
    if imgs and role in ("user", "tool"):
        # Images of user messages and of tool results (screenshots) leave oldest first.
        m.images = [image_bytes(im, blob_size) for im in imgs]
        m.body += sum(m.images) - sum(len(canonical(im)) for im in imgs)
    if role == "user":
        m.real_user = not item.get("synthetic")
    elif role == "tool":
        m.result = True
        m.tool = names.get(item.get("call_id", ""), "")
        out = item.get("output")
        if isinstance(out, str):
            m.chars = len(out)
            m.omit_saves = vi.tokens - item_tokens(placeholder_item(item, omit_reason(opts), ref))
            if m.chars > opts.trim_over and opts.trim_head + opts.trim_tail < m.chars:
                m.trim_saves = vi.tokens - item_tokens(trimmed_item(item, opts.trim_head, opts.trim_tail, ref))
    elif role == "assistant" and item.get("tool_calls"):
        ids = []
        for c in item["tool_calls"]:
            cid = c.get("call_id", "")
            ids.append(cid)
            names[cid] = c.get("name", "")
            if opts.clear_inputs:
                before = len(canonical(c.get("args")))
                after = len(canonical(cleared_args(call_seqs.get(cid, item.get("seq")), ref)))
                m.args_saves[cid] = size_tokens(before - after)
        m.call_ids = tuple(ids)
    return m
