"""The simulator under a flood, and the reasoner's cost against the prompt's size.

    python benchmarks/sim_flood.py                    # both parts, default sizes
    python benchmarks/sim_flood.py --clients 50 --requests 8 --long 5 --timeout 15
    python benchmarks/sim_flood.py --part reasoner    # only the reasoner's scaling

Part 1, the reasoner: `reasoner.decide` on one user message of 50 KB to 800 KB (`--sizes`), in several
shapes (many asks, Japanese, currencies, quotes and ids, plain words), best of 3 each. Printed: the time per
size and the ratio of the largest size's time to that of half its size (2.0 for work linear in the prompt,
4.0 for quadratic, about 1.0 for bounded).

Part 2, the flood: the simulator in its own process (`python -m agentkit.sim`, 127.0.0.1), and `--clients`
concurrent clients (asyncio + httpx, one connection each). `--long` of them send one ~400 KB prompt each;
the others send `--requests` short requests one after another, cycling through every format, streamed and
not (after a warm-up of one request per format, so the figures are not the first requests' set-up). Each
request may take `--timeout` seconds (the fuzz that found the stall used 15 s). Printed: how many
were answered, the short requests' median, p99 and max latency and p99 / median (target: every request
answered, p99 within 10x the median), the long ones' median, and how many `socket.send() raised exception.`
lines the server logged.

To compare with other code, point PYTHONPATH at its checkout: the server process inherits it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

import httpx

from agentkit.core.types import Message, ModelOptions, ToolSpec
from agentkit.providers import get_codec
from agentkit.sim import reasoner as R
from agentkit.sim.server import base_path
from agentkit.sim.wire.common import ChatRequest

WEATHER = ToolSpec("get_weather", "Current weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
MODELS = {"openai-chat": "gpt-4.1", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-3-flash-preview",
          "openai-responses": "gpt-4.1", "ollama": "llama3.2"}
SHAPES = {"many asks": "weather in Paris and ", "Japanese": "東京の天気と", "currencies": "1 dollar in yen; ",
          "quotes and ids": "\"q\" INV-12 ", "plain words": "plain words without anything to read "}
LONG_UNIT = "the weather in Paris and the rate of the yen; "


def prompt_of(unit: str, size: int) -> str:
    return unit * (size // len(unit.encode()))


def reasoner_scaling(sizes: tuple[int, ...]) -> None:
    top, half = sizes[-1], sizes[-1] // 2
    print("reasoner.decide, best of 3 (seconds)")
    print(f"{'shape':16}" + "".join(f"{s // 1000:>8} KB" for s in sizes) + f"   {top // 1000}/{half // 1000} KB")
    for name, unit in SHAPES.items():
        row = []
        for size in sizes:
            request = ChatRequest("sim-reasoner", (Message.user(prompt_of(unit, size)),), (WEATHER,))
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                R.decide(request)
                best = min(best, time.perf_counter() - start)
            row.append(best)
        by_size = dict(zip(sizes, row))
        ratio = by_size[top] / by_size[half] if half in by_size else float("nan")
        print(f"{name:16}" + "".join(f"{t:11.3f}" for t in row) + f"   {ratio:8.2f}")


def start_server(log) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "agentkit.sim", "--port", "0", "--log-level", "warning"],
                               stdout=subprocess.PIPE, stderr=log, text=True, env=dict(os.environ))
    line = process.stdout.readline()
    if "listening on" not in line:
        process.kill()
        raise SystemExit(f"the simulator did not start: {line!r}")
    return process, line.split("listening on", 1)[1].strip()


def wire(fmt: str, prompt: str, stream: bool) -> tuple[str, dict, dict]:
    codec = get_codec(fmt)
    request = codec.build_request(MODELS[fmt], [Message.user(prompt)], [WEATHER], ModelOptions(stream=stream))
    return base_path(fmt) + request.path, request.body, {**request.headers, **codec.auth_headers("sk-sim")}


async def one(client: httpx.AsyncClient, fmt: str, prompt: str, stream: bool, timeout: float) -> float | None:
    """Seconds until the whole answer was read, or None when it failed or took longer than `timeout`."""
    path, body, headers = wire(fmt, prompt, stream)
    start = time.perf_counter()
    try:
        async with asyncio.timeout(timeout):
            response = await client.post(path, json=body, headers=headers)
            await response.aread()
    except (TimeoutError, httpx.HTTPError):
        return None
    return time.perf_counter() - start if response.status_code == 200 else None


async def flood(url: str, clients: int, requests: int, long: int, timeout: float) -> tuple[list, list]:
    formats = list(MODELS)
    long_prompt = prompt_of(LONG_UNIT, 400_000) + "Weather in Tokyo?"

    async def client_task(k: int, client: httpx.AsyncClient) -> tuple[str, list]:
        if k < long:
            return "long", [await one(client, formats[k % len(formats)], long_prompt, k % 2 == 0, timeout)]
        out = []
        for i in range(requests):
            fmt = formats[(k + i) % len(formats)]
            out.append(await one(client, fmt, f"Weather in Tokyo? (client {k}, request {i})", i % 2 == 0, timeout))
        return "short", out

    # The clients are made first: making one costs the client process tens of milliseconds, which would
    # otherwise be counted in the latency of the requests already in flight.
    pool = [httpx.AsyncClient(base_url=url, timeout=None) for _ in range(clients)]
    try:
        for k, fmt in enumerate(formats):  # warm-up: one request per format
            await one(pool[0], fmt, "Weather in Tokyo?", k % 2 == 0, timeout)
        results = await asyncio.gather(*(client_task(k, client) for k, client in enumerate(pool)))
    finally:
        for client in pool:
            await client.aclose()
    shorts = [t for kind, ts in results if kind == "short" for t in ts]
    longs = [t for kind, ts in results if kind == "long" for t in ts]
    return shorts, longs


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def flood_figures(clients: int, requests: int, long: int, timeout: float) -> None:
    with tempfile.TemporaryFile("w+") as log:
        process, url = start_server(log)
        try:
            started = time.perf_counter()
            shorts, longs = asyncio.run(flood(url, clients, requests, long, timeout))
            wall = time.perf_counter() - started
        finally:
            process.terminate()
            process.wait(10)
        log.seek(0)
        send_errors = log.read().count("socket.send() raised exception.")
    answered = [t * 1000 for t in shorts if t is not None]
    total = len(shorts) + len(longs)
    done = len(answered) + sum(t is not None for t in longs)
    print(f"flood: {clients} clients ({long} with a ~400 KB prompt), {total} requests, {wall:.1f} s wall")
    print(f"answered within {timeout:g} s: {done} of {total}")
    if answered:
        p50, p99 = statistics.median(answered), percentile(answered, 0.99)
        print(f"short requests: median {p50:.1f} ms, p99 {p99:.1f} ms, max {max(answered):.1f} ms, "
              f"p99/median {p99 / p50:.1f}x (target <= 10x)")
    long_done = [t for t in longs if t is not None]
    if long_done:
        print(f"long prompts: median {statistics.median(long_done):.2f} s ({len(long_done)} of {len(longs)})")
    print(f"server log lines 'socket.send() raised exception.': {send_errors}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["both", "reasoner", "flood"], default="both")
    parser.add_argument("--sizes", default="50,100,200,400,800", help="prompt sizes in KB (default 50,...,800)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=8, help="short requests per client (default 8)")
    parser.add_argument("--long", type=int, default=5, help="clients that send one ~400 KB prompt (default 5)")
    parser.add_argument("--timeout", type=float, default=15.0, help="seconds a request may take (default 15)")
    args = parser.parse_args()
    if args.part in ("both", "reasoner"):
        reasoner_scaling(tuple(int(k) * 1000 for k in args.sizes.split(",")))
    if args.part in ("both", "flood"):
        flood_figures(args.clients, args.requests, args.long, args.timeout)


if __name__ == "__main__":
    main()
