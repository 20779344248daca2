"""A local server that answers one request at a time: which --concurrency and --timeout lose no case?

    python benchmarks/single_stream.py                       # 8 cases, answers 0.5 s apart, timeout 1.5 s
    python benchmarks/single_stream.py --answer 2 --timeout 6

A single-stream server (llama.cpp with one slot, Ollama with OLLAMA_NUM_PARALLEL=1, a small GPU box)
takes one request, answers it, then takes the next. Stands in for one here: a socket server on
127.0.0.1 that serves one connection at a time and answers each request after `--answer` seconds (the
ratio to `--timeout` is what matters: the issue's case was 20 s answers and a 60 s timeout, 1 : 3).
For each --concurrency it runs the same cases through `run_benchmark` with HTTPModel's retries and
prints the wall time, the attempts that timed out, and the trials lost to provider errors (not scored).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socketserver
import threading
import time
from functools import partial
from pathlib import Path
from tempfile import TemporaryDirectory

from agentkit.bench.runner import HTTPModels, run_benchmark
from agentkit.bench.suites import load_cases

ANSWER = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Done."}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}).encode()


class OneAtATime(socketserver.TCPServer):
    """Serves one connection at a time (no threads): later connections wait in the listen backlog."""

    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, seconds: float):
        self.seconds = seconds
        server = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                length = 0
                while (line := self.rfile.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                self.rfile.read(length)
                time.sleep(server.seconds)  # the model is thinking; nobody else is served meanwhile
                try:
                    self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                                     + f"content-length: {len(ANSWER)}\r\n\r\n".encode() + ANSWER)
                except OSError:  # the client gave up (timeout) while it waited
                    pass

        super().__init__(("127.0.0.1", 0), Handler)


def _count(timeouts: list, attempt) -> None:
    if attempt.error_type == "timeout":
        timeouts.append(attempt)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--answer", type=float, default=0.5, help="seconds per answer")
    parser.add_argument("--timeout", type=float, default=1.5)
    parser.add_argument("--retries", type=int, default=2)
    parser.add_argument("--concurrency", default="8,4,2,1")
    args = parser.parse_args()
    cases = load_cases("agentkit:limits,agentkit:error_recovery", limit=args.cases)[:args.cases]
    print(f"{len(cases)} cases, answers {args.answer:g} s apart, one at a time; --timeout {args.timeout:g}, "
          f"--max-retries {args.retries}")
    print("| --concurrency | wall time | attempts timed out | trials not scored |")
    print("|---:|---:|---:|---:|")
    for concurrency in map(int, args.concurrency.split(",")):
        server = OneAtATime(args.answer)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        host, port = server.server_address[:2]
        timeouts: list = []
        make_model = HTTPModels("m", base_url=f"http://{host}:{port}/v1", api_key="k", timeout=args.timeout,
                                max_retries=args.retries, backoff=0.1, on_attempt=partial(_count, timeouts))
        with TemporaryDirectory() as folder:
            started = time.perf_counter()
            summary = asyncio.run(run_benchmark(cases, make_model=make_model, concurrency=concurrency,
                                                progress=False, out=Path(folder) / "r.jsonl"))
            wall = time.perf_counter() - started
        server.shutdown()
        server.server_close()
        print(f"| {concurrency} | {wall:.1f} s | {len(timeouts)} | {summary.errors} of {summary.done} |")


if __name__ == "__main__":
    main()
