"""Record the JSON-RPC messages an MCP session exchanges, exactly as the stdio transport would write them.

    log = WireLog()
    with agentkit.mcp.connect(server, wire=log) as client:
        ...
    for line in log.lines():
        print(line)        # >>> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{...}}
                           # <<< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25",...}}

The recorder sits between the SDK's transport and its session: it sees every message the session sends
(">>>", client to server) and receives ("<<<"), serialised with the same call the SDK's stdio transport
uses for each line (`model_dump_json(by_alias=True, exclude_unset=True)`). Nothing is typed by hand.

Left out on purpose: HTTP headers and SSE framing of the Streamable HTTP transport (the JSON-RPC
messages inside are the same).
"""

from __future__ import annotations

import json
import threading
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from ..providers.common import dumps

SENT, RECEIVED = ">>>", "<<<"


class WireLog:
    """The messages of one or more sessions, in order: `(direction, message)` with direction ">>>" or "<<<"."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict]] = []
        self._lock = threading.Lock()

    def record(self, direction: str, item: Any) -> None:
        # A SessionMessage; transports may also hand over exceptions (some with a `message` of their own).
        message = getattr(item, "message", None)
        if hasattr(message, "model_dump_json"):
            entry = json.loads(message.model_dump_json(by_alias=True, exclude_unset=True))
        else:
            entry = {"error": f"{type(item).__name__}: {' '.join(str(item).split())[:300]}"}
        with self._lock:
            self.messages.append((direction, entry))

    def clear(self) -> None:
        with self._lock:
            self.messages.clear()

    def __iter__(self):
        return iter(list(self.messages))

    def __len__(self) -> int:
        return len(self.messages)

    def methods(self) -> list[str]:
        """One word per message: the method of a request or notification, `result` or `error` for answers."""
        out = []
        for direction, message in self.messages:
            word = message.get("method") or ("error" if "error" in message else "result")
            out.append(f"{direction} {word}")
        return out

    def lines(self, max_chars: int | None = None) -> list[str]:
        """Each message as one line of compact JSON, prefixed by its direction (what stdio carries)."""
        out = []
        for direction, message in self.messages:
            text = dumps(message)
            if max_chars is not None and len(text) > max_chars:
                text = text[:max_chars - 1] + "…"
            out.append(f"{direction} {text}")
        return out


class _RecordingReader:
    def __init__(self, stream: Any, log: WireLog):
        self._stream, self._log = stream, log

    async def receive(self) -> Any:
        item = await self._stream.receive()
        self._log.record(RECEIVED, item)
        return item

    def __aiter__(self) -> _RecordingReader:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:  # what anyio's own streams do at the end
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _RecordingReader:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # e.g. `last_context`, which the SDK reads if present
        return getattr(self._stream, name)


class _RecordingWriter:
    def __init__(self, stream: Any, log: WireLog):
        self._stream, self._log = stream, log

    async def send(self, item: Any) -> None:
        self._log.record(SENT, item)
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _RecordingWriter:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@asynccontextmanager
async def recorded(transport: Any, log: WireLog) -> AsyncIterator[tuple[Any, Any]]:
    """A transport (an async context manager yielding read and write streams) whose traffic goes to `log`."""
    async with transport as (read_stream, write_stream):
        yield _RecordingReader(read_stream, log), _RecordingWriter(write_stream, log)
