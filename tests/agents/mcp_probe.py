"""A minimal stdio MCP server for harness tests (newline-delimited JSON-RPC, stdlib only, so
it runs without the SDK): one tool, `probe(word)`, answering "probe saw WORD" — enough to see
an agent's MCP client start a server, list its tool and call it."""
import json
import sys

TOOL = {"name": "probe", "description": "Echo the word back, marked.",
        "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}


def answer(req: dict) -> dict | None:
    method, rid = req.get("method"), req.get("id")
    if rid is None:  # a notification
        return None
    if method == "initialize":
        version = req.get("params", {}).get("protocolVersion", "2025-06-18")
        result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        word = req.get("params", {}).get("arguments", {}).get("word", "")
        result = {"content": [{"type": "text", "text": f"probe saw {word}"}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


for line in sys.stdin:
    if line.strip():
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
