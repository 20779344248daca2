"""How much time the simulator adds to one request: median and p99 over 1,000 keep-alive requests.

    python benchmarks/sim_latency.py                 # 1,000 requests, target median <= 2 ms
    python benchmarks/sim_latency.py -n 5000

One httpx.Client (keep-alive, so no connection set-up is measured) sends a small, non-streamed
openai-chat request to the simulator on 127.0.0.1, 1,000 times after a warm-up. Two figures:

    round trip   the whole request as a client sees it (client + HTTP + simulator)
    baseline     the same client against a bare ASGI app on the same uvicorn set-up
    added        round trip minus baseline: routing, JSON, codec, model decision, encoding

The request is the same every time, so the simulator's determinism is on the hot path too.
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx

from agentkit import sim
from agentkit.core.types import ModelTurn, Usage
from agentkit.sim.wire.common import ChatRequest

BODY = {"model": "sim-reasoner", "messages": [{"role": "user", "content": "Say hello."}]}


def timings(client: httpx.Client, path: str, n: int, warmup: int = 100) -> list[float]:
    for _ in range(warmup):
        client.post(path, json=BODY).raise_for_status()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        response = client.post(path, json=BODY)
        out.append(time.perf_counter() - start)
        response.raise_for_status()
    return out


def summary(samples: list[float]) -> tuple[float, float]:
    ms = sorted(s * 1000 for s in samples)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


def bare_app_server():
    """A minimal ASGI app behind the very same server set-up: the cost of HTTP alone."""
    import threading

    import uvicorn

    from agentkit.sim.server import SimServer, http_protocol, listening_socket

    body = b'{"ok":true}'

    async def app(scope, receive, send):
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"11")]})
        await send({"type": "http.response.body", "body": body})

    sock = listening_socket()
    config = uvicorn.Config(app, http=http_protocol(), loop="asyncio", lifespan="off", log_config=None,
                            log_level="warning", access_log=False, server_header=False, proxy_headers=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.001)
    return SimServer(server, sock, thread, app=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="measured requests (default 1000)")
    parser.add_argument("--stub", action="store_true", help="use a trivial respond() instead of the real models")
    args = parser.parse_args()

    options = {}
    if args.stub:
        def respond(request: ChatRequest) -> ModelTurn:
            return ModelTurn("Hello!", usage=Usage(12, 3), model=request.model)
        options = {"respond": respond, "models": ("sim-reasoner",)}

    headers = {"authorization": "Bearer sk-sim"}
    with sim.serve(**options) as server, httpx.Client(base_url=server.url, headers=headers) as client:
        sim_samples = timings(client, "/v1/chat/completions", args.n)
    bare = bare_app_server()
    try:
        with httpx.Client(base_url=bare.url, headers=headers) as client:
            bare_samples = timings(client, "/", args.n)
    finally:
        bare.stop()

    med, p99 = summary(sim_samples)
    bmed, bp99 = summary(bare_samples)
    print(f"round trip   median {med:6.3f} ms   p99 {p99:6.3f} ms   ({args.n} keep-alive requests)")
    print(f"baseline     median {bmed:6.3f} ms   p99 {bp99:6.3f} ms   (bare ASGI app, same server)")
    print(f"added        median {med - bmed:6.3f} ms")
    verdict = "OK" if med <= 2.0 else "OVER"
    print(f"sim_latency: median {med:.3f} ms, p99 {p99:.3f} ms, added {med - bmed:.3f} ms over bare HTTP "
          f"(target median <= 2 ms: {verdict})")


if __name__ == "__main__":
    main()
