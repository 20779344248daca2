"""The stdio transport: an MCP server as a child process, one JSON-RPC message per line each way.

    transport = StdioTransport(["python", "-m", "agentkit.mcp", "serve", "app:TOOLS"], errlog=file)
    async with transport.open() as (read_stream, write_stream):   # what the SDK's session reads and writes
        ...
    transport.pid, transport.broken                                # the server's pid; why reading stopped

It does what the SDK's `stdio_client` does (spawn in a new process group, newline-delimited JSON, the
spec's shutdown: close stdin, wait, SIGTERM, SIGKILL), plus what a client needs when the server
misbehaves, which the SDK's transport does not do:

    bytes that are not UTF-8    the connection is broken: the session sees its end at once, so the call
                                under way and every later one fail as a closed connection, naming the
                                line and byte (the SDK's reader task dies and every call waits its timeout)
    a line over max_line_bytes  not kept in memory: the rest of the line is skipped and the request it
                                answers gets a JSON-RPC error saying how big it was (code LINE_TOO_LONG)
    a line that is not JSON     skipped, and kept in `noise` (the first few) for error messages: servers
                                that print a banner before `initialize` are common
    close                       after the server has gone, whatever is left of its process group (its own
                                children) is terminated too: nothing the server started outlives it

Left out on purpose: Windows (agentkit.mcp.client uses the SDK's transport there), and daemons that
leave the process group on purpose (setsid): they are not the server's to keep alive, nor ours to find.
"""

from __future__ import annotations

import os
import re
import signal
from contextlib import asynccontextmanager, suppress
from typing import Any, AsyncIterator, Sequence, TextIO

import anyio

try:
    import mcp_types
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage
except ImportError:  # without the extra: one line naming it, not a traceback
    from . import missing_sdk

    raise missing_sdk() from None

#: The JSON-RPC error code of a request whose answer was over max_line_bytes (implementation-defined range).
LINE_TOO_LONG = -32090
#: Seconds the server has to exit after its stdin closes, then after SIGTERM (the SDK's own figures).
EXIT_GRACE, TERM_GRACE = 2.0, 2.0
_NOISE_KEPT = 5
_EDGE = 512  # bytes kept from each end of a line that is too long: its "id" is in one of them
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


class StdioTransport:
    """One child process and the two streams the SDK's session talks through. `open()` once."""

    def __init__(self, command: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                 errlog: TextIO | None = None, max_line_bytes: int = 16 * 1024 * 1024):
        self.command = list(command)
        self.env = get_default_environment() | (env or {})
        self.cwd, self.errlog, self.max_line_bytes = cwd, errlog, max_line_bytes
        self.pid: int | None = None
        self.broken: str | None = None    # how the server broke the connection, after its name (None: EOF, or not)
        self.noise: list[str] = []        # the first lines that were not JSON-RPC

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        process = await anyio.open_process(self.command, env=self.env, cwd=self.cwd, stderr=self.errlog,
                                           start_new_session=True)  # its own group: close() ends all of it
        self.pid = process.pid
        # No await between the spawn and the task group: a cancellation there would leak the process.
        to_session, read_stream = anyio.create_memory_object_stream[Any](0)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._read, process, to_session)
            tasks.start_soon(self._write, process, from_session, to_session)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):  # a cancelled caller must not leak the server
                    write_stream.close()
                    read_stream.close()
                    await _stop(process)
                tasks.cancel_scope.cancel()

    async def _read(self, process: Any, to_session: Any) -> None:
        """stdout -> the session, line by line; ends the session's stream when the connection breaks."""
        buffer = bytearray()      # the line being read
        skipped, head, tail = 0, b"", b""  # a line over the limit: its size so far, and both its ends
        number = 0
        async with to_session:
            try:
                while True:
                    chunk = await process.stdout.receive(65536)
                    while chunk:
                        end = chunk.find(b"\n")
                        part, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1:])
                        if skipped:
                            skipped, tail = skipped + len(part), (tail + part)[-_EDGE:]
                        else:
                            buffer += part
                            if len(buffer) > self.max_line_bytes:  # stop keeping it: only its size and ends
                                skipped, head, tail = len(buffer), bytes(buffer[:_EDGE]), bytes(buffer[-_EDGE:])
                                buffer.clear()
                        if end < 0:
                            break
                        number += 1
                        if skipped:
                            await self._too_long(to_session, head, tail, skipped)
                            skipped = 0
                        else:
                            line = bytes(buffer)
                            buffer.clear()
                            if not await self._deliver(to_session, line, number):
                                return
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return  # the server closed stdout (it exited), or we are shutting down

    async def _deliver(self, to_session: Any, line: bytes, number: int) -> bool:
        """One complete line to the session; False when the connection is broken."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.broken = (f"sent bytes that are not UTF-8 (line {number}, byte {exc.start}: 0x{line[exc.start]:02x});"
                           f" the connection is broken")
            return False
        if not text.strip():
            return True
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValueError:
            if len(self.noise) < _NOISE_KEPT:
                self.noise.append(text.strip()[:200])
            return True
        try:
            await to_session.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def _too_long(self, to_session: Any, head: bytes, tail: bytes, size: int) -> None:
        """Answer the request a too-long line was for (if it says which) with an error instead."""
        found = _ID.search(head) or _ID.search(tail)
        if found is None or b'"method"' in head + tail:  # no id, or a request of the server's: nobody waits
            if len(self.noise) < _NOISE_KEPT:
                self.noise.append(f"(a line of {size:,} bytes, over the limit of {self.max_line_bytes:,})")
            return
        raw = found.group(1).decode("utf-8", "replace")
        request_id: Any = int(raw) if raw.lstrip("-").isdigit() else raw[1:-1]
        error = mcp_types.ErrorData(code=LINE_TOO_LONG, message=f"the answer is {size:,} bytes; the limit is "
                                                                 f"{self.max_line_bytes:,}")
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await to_session.send(SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                                                         error=error)))

    async def _write(self, process: Any, from_session: Any, to_session: Any) -> None:
        """The session -> stdin; a server that stopped reading ends the session's stream."""
        try:
            async with from_session:
                async for item in from_session:
                    line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(line.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            if self.broken is None:
                self.broken = "stopped reading its stdin (did it exit or crash?)"
            await to_session.aclose()


async def _stop(process: Any) -> None:
    """The spec's shutdown (close stdin, wait, SIGTERM, SIGKILL), then the rest of its process group."""
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, EXIT_GRACE):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        if not await _exited(process, TERM_GRACE):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await _exited(process, TERM_GRACE)
    # The server is gone; its children (a shell's, a worker pool) may not be. The group outlives its leader.
    await _end_group(process.pid)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    if transport is not None:  # asyncio's transport warns at collection if left open
        with suppress(Exception):
            transport.close()


async def _end_group(group: int) -> None:
    """SIGTERM what still runs in the process group, SIGKILL what is left after TERM_GRACE.

    Not the SDK's terminate_posix_process_tree: it waits until the group is gone, and an orphan's zombie
    stays in the group until whoever is PID 1 reaps it (in a container, maybe never). Zombies have ended.
    """
    if running_in_group(group) == []:
        return
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGTERM)
    with anyio.move_on_after(TERM_GRACE):
        while running_in_group(group) != []:  # None (no /proc): wait out the grace period
            await anyio.sleep(0.01)
        return
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def running_in_group(group: int) -> list[int] | None:
    """The processes of a process group that still run (zombies excluded), from /proc; None without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()  # state, ppid, pgrp, ...
        except OSError:  # it ended while we looked
            continue
        if int(fields[2]) == group and fields[0] != b"Z":
            members.append(int(entry))
    return members


async def _exited(process: Any, seconds: float) -> bool:
    """Poll the return code (process.wait() also waits for the pipes, which a grandchild may hold)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None
