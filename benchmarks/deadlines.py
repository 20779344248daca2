"""How long past its deadline an HTTPModel call really ends, against servers that trickle.

    python benchmarks/deadlines.py              # 3 runs per case, timeout=1.0 s, one byte every 0.3 s
    python benchmarks/deadlines.py -n 5

Each case starts tests/hostile_server.py on 127.0.0.1 in one mode (a byte every 0.3 s in the status line,
the headers, the body, a chunked body; an SSE stream of `: keep-alive` comments or of one event trickled;
one event then keep-alives for ever) and makes one call with max_retries=0. The figure is the overshoot:
how long after its bound the call ended with ProviderTimeout (timeout=1.0 s: the bound is 1.0 s after the
call started; for the `stream()` case, 1.0 s after the second event was asked for; total_timeout=1.5 s
with timeout=1.0 s and retries: 1.5 s after the call started). Median and worst of the runs.

The first row is the reason for all this: plain httpx with timeout=1.0 against the same server, given up
on by this script after 5 s (httpx's timeouts bound each read, and every read here is short).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from hostile_server import HostileServer  # noqa: E402 - the test suite's trickling server

from agentkit.core.errors import ProviderTimeout  # noqa: E402
from agentkit.core.types import Message, ModelOptions  # noqa: E402
from agentkit.http import HTTPModel  # noqa: E402

MESSAGES = [Message.user("Say hi.")]
TIMEOUT = 1.0
STREAM = ModelOptions(stream=True)


def plain_httpx(mode: str, give_up: float = 5.0) -> str:
    """Plain httpx.Client(timeout=1.0).post against the trickle: does it end within `give_up` seconds?"""
    ended = threading.Event()
    with HostileServer(mode) as server:
        def post():
            try:
                httpx.Client(timeout=TIMEOUT).post(server.url + "/chat/completions", json={})
            except httpx.HTTPError:
                pass
            ended.set()

        start = time.monotonic()
        threading.Thread(target=post, daemon=True).start()
        finished = ended.wait(give_up)
        return f"ended after {time.monotonic() - start:.2f} s" if finished else f"still running at {give_up:.0f} s"


def one_call(mode: str, how: str, **kw) -> float:
    """Seconds from the call's bound to the moment it ended in ProviderTimeout."""
    kw.setdefault("timeout", TIMEOUT)
    kw.setdefault("max_retries", 0)
    with HostileServer(mode) as server:
        model = HTTPModel("m", base_url=server.url, api_key="bench-key", **kw)
        bound = kw.get("total_timeout") or TIMEOUT
        start = time.monotonic()
        try:
            if how == "sync":
                model.complete(MESSAGES)
            elif how == "sync stream":
                model.complete(MESSAGES, options=STREAM)
            elif how == "async":
                asyncio.run(model.acomplete(MESSAGES))
            elif how == "async stream":
                asyncio.run(model.acomplete(MESSAGES, options=STREAM))
            elif how == "stream()":
                events = iter(model.stream(MESSAGES))
                next(events)
                start = time.monotonic()  # the bound restarts when the next event is asked for
                next(events)
        except ProviderTimeout:
            return time.monotonic() - start - bound
        finally:
            model.close()
        raise AssertionError(f"{mode} / {how}: no ProviderTimeout")


CASES = [
    ("status line", "status", "sync", {}), ("status line", "status", "async", {}),
    ("headers", "headers", "sync", {}), ("headers", "headers", "async", {}),
    ("body (Content-Length)", "body", "sync", {}), ("body (Content-Length)", "body", "async", {}),
    ("chunked body", "chunked", "sync", {}), ("chunked body", "chunked", "async", {}),
    ("SSE keep-alive comments only", "keepalive", "sync stream", {}),
    ("SSE keep-alive comments only", "keepalive", "async stream", {}),
    ("SSE event trickled", "sse-trickle", "sync stream", {}),
    ("SSE event trickled", "sse-trickle", "async stream", {}),
    ("one event, then keep-alives", "event-then-keepalive", "stream()", {}),
    ("total_timeout=1.5, retries", "keepalive", "sync stream",
     {"total_timeout": 1.5, "max_retries": 10, "backoff": 0.01}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=3, help="runs per case (default 3)")
    args = parser.parse_args()
    print(f"plain httpx, timeout={TIMEOUT:g}, trickled headers: {plain_httpx('headers')}")
    print()
    print(f"| trickle (one byte / 0.3 s) | call | overshoot, median of {args.n} | worst |")
    print("|---|---|---|---|")
    for label, mode, how, kw in CASES:
        overshoots = [one_call(mode, how, **kw) for _ in range(args.n)]
        print(f"| {label} | {how} | {statistics.median(overshoots) * 1000:.0f} ms "
              f"| {max(overshoots) * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
