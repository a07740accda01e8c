"""The floor under any Python program that reads agents' homes: a bare interpreter reading every log.

    python bench/read_floor.py [--scan] FOLDER...

Walks the FOLDERs and reads every session file (`.jsonl`, `.json`, `.db`, as `usage` finds
them) with one open and whole reads, the files dealt between one forked process per CPU, as
`usage` deals them. With --scan each JSON Lines file and JSON document is also run through
msgspec's JSON scanner as raw values (every byte checked, nothing built): the least that
reading a log's lines as JSON costs. It imports nothing of catty-ctx, builds
no record and sums nothing, so its time is what the interpreter, the system calls and the
JSON scan cost before any ledger work. bench/usage.py times it beside ccusage on the mixed home.
"""
from __future__ import annotations

import os
import sys

import msgspec  # (any parser's start loads a JSON decoder: the floor pays for it too)

SUFFIXES = (".jsonl", ".json", ".db")


def files_under(folders: list[str]) -> list[str]:
    out = []
    for folder in folders:
        for root, _dirs, names in os.walk(folder):
            out.extend(os.path.join(root, n) for n in names if n.endswith(SUFFIXES))
    return out


def read_all(paths: list[str], scan: bool) -> int:
    lines_of = one_of = None
    if scan:
        lines_of = msgspec.json.Decoder(msgspec.Raw).decode_lines
        one_of = msgspec.json.Decoder(msgspec.Raw).decode
    total = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            chunks = []
            while True:
                data = os.read(fd, 1 << 24)
                if not data:
                    break
                chunks.append(data)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        total += len(data)
        if lines_of is not None and one_of is not None and not path.endswith(".db"):
            try:
                (lines_of if path.endswith(".jsonl") else one_of)(data)
            except msgspec.DecodeError:
                pass  # (a torn or bad line: the scan stops there, as a parser's would)
    return total


def main() -> int:
    args = sys.argv[1:]
    scan = "--scan" in args
    folders = [a for a in args if a != "--scan"]
    paths = files_under(folders)
    jobs = os.cpu_count() or 1
    children = []
    for k in range(1, jobs):
        pid = os.fork()
        if pid == 0:
            read_all(paths[k::jobs], scan)
            os._exit(0)
        children.append(pid)
    read_all(paths[0::jobs], scan)
    for pid in children:
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
