"""SPEC "Fingerprints": canonical form and the xxh3-128 chain, checked against golden vectors."""
from __future__ import annotations

import orjson
import xxhash

from catty_ctx.view.fingerprint import Chain, canonical, chain_hex, prefix_fp, seed
from support import FIXTURES, cli

VECTORS = orjson.loads((FIXTURES / "fingerprints" / "vectors.json").read_bytes())


def test_seed_is_the_hash_of_the_label() -> None:
    assert seed().hex() == VECTORS["fp0"] == xxhash.xxh3_128_hexdigest(b"catty-ctx/v1")


def test_golden_canonical_forms() -> None:
    for row in VECTORS["vectors"]:
        assert canonical(row["item"]).decode() == row["canonical"]


def test_golden_chain() -> None:
    items = [row["item"] for row in VECTORS["vectors"]]
    assert list(chain_hex(items)) == [row["fp"] for row in VECTORS["vectors"]]
    assert prefix_fp(items) == VECTORS["vectors"][-1]["fp"]


def test_non_ascii_is_left_unescaped_and_keys_sorted_at_every_level() -> None:
    out = canonical({"b": {"z": 1, "a": "ü"}, "a": 1})
    assert out == '{"a":1,"b":{"a":"ü","z":1}}'.encode()


def test_every_field_counts() -> None:
    base = {"seq": 3, "role": "assistant", "text": "", "tool_calls": [{"call_id": "c1", "name": "edit", "args": {"path": "a"}}]}
    changed_arg = {**base, "tool_calls": [{"call_id": "c1", "name": "edit", "args": {"path": "b"}}]}
    changed_id = {**base, "tool_calls": [{"call_id": "c2", "name": "edit", "args": {"path": "a"}}]}
    synthetic = {**base, "synthetic": "x"}
    fps = {prefix_fp([x]) for x in (base, changed_arg, changed_id, synthetic)}
    assert len(fps) == 4


def test_extending_a_prefix_matches_hashing_it_whole() -> None:
    items = [row["item"] for row in VECTORS["vectors"]]
    chain = Chain()
    for item in items[:3]:
        chain.add(item)
    for item in items[3:]:
        chain.add(item)
    assert chain.hex == prefix_fp(items)


def test_chain_recomputed_from_inspect_items_json(demo) -> None:
    """Anyone can recompute the chain from what `inspect --items --json` prints."""
    doc = orjson.loads(cli("inspect", str(demo), "--items", "--json", check=True).stdout)
    prev = xxhash.xxh3_128_digest(b"catty-ctx/v1")
    assert doc["items"], "the demo view has items"
    for i, row in enumerate(doc["items"]):
        assert row["index"] == i
        canon = orjson.dumps(row["item"], option=orjson.OPT_SORT_KEYS)
        prev = xxhash.xxh3_128_digest(prev + canon)
        assert row["fp"] == prev.hex()
        assert row["tokens"] == len(canon) // 4
    report = orjson.loads(cli("inspect", str(demo), "--json", check=True).stdout)
    assert report["fp"] == doc["items"][-1]["fp"]


def test_golden_vectors_are_printed_in_the_format_doc() -> None:
    doc = (FIXTURES.parent / "docs" / "format.md").read_text()
    assert VECTORS["fp0"] in doc
    for row in VECTORS["vectors"]:
        assert row["fp"] in doc
