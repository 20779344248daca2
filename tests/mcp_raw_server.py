"""A stdio MCP server written by hand (no SDK), so that it can break the protocol on purpose.

    python mcp_raw_server.py MODE

MODE  garble       answers a call of `garble` with a line that is not UTF-8, then goes on answering
      banner       prints a banner line to stdout before it speaks the protocol
      banner-exit  prints a banner line to stdout and exits before the handshake
Tools: `ping` (answers "pong") and `garble`.
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1]
TOOLS = [{"name": name, "description": f"{name}.", "inputSchema": {"type": "object", "properties": {}}}
         for name in ("ping", "garble")]
out = sys.stdout.buffer


def send(message: dict) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


if MODE.startswith("banner"):
    out.write(b"Starting the weather server v1.2 ...\n")
    out.flush()
    if MODE == "banner-exit":
        sys.exit(1)

for raw in sys.stdin.buffer:
    message = json.loads(raw)
    if "id" not in message:
        continue  # a notification
    method, request_id = message["method"], message["id"]
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call" and message["params"]["name"] == "garble":
        out.write(b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", "text": "\xff\xfe"}]}}\n'
                  % request_id)
        out.flush()
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "pong"}]}})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})
