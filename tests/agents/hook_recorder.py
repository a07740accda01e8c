"""A hook command for tests: appends {"event", "input"} (the JSON the agent wrote on stdin) to
LOG as one line, and prints REPLY (a JSON document) when given, as the agent's hook output.

    python hook_recorder.py LOG EVENT [REPLY]
"""
import json
import sys

log, event = sys.argv[1], sys.argv[2]
raw = sys.stdin.read()
try:
    data = json.loads(raw)
except ValueError:
    data = raw
with open(log, "a", encoding="utf-8") as f:
    f.write(json.dumps({"event": event, "input": data}) + "\n")
if len(sys.argv) > 3:
    print(sys.argv[3])
