"""The runner: every (case, trial) through `agentkit.arun`, N at a time, each result one JSON line.

    summary = await run_benchmark(cases, model, out="results/gpt-4.1.jsonl", label="gpt-4.1",
                                  trials=3, concurrency=16, rate=RateLimit(per_minute=500))
    summary.passed, summary.done           # the file holds one line per (case, trial)

What it promises:
- N conversations in flight (`concurrency`), each a real agent loop (`agentkit.arun`) with native
  tool calling: tools travel in the provider's own tools field, calls come back as tool calls;
- one `RateLimit` per provider spaces out *model calls* (not cases), shared by every trial;
- retries, backoff and timeouts are HTTPModel's (max_retries=, timeout=), not the runner's;
- every finished (case, trial) is appended to the JSONL file and flushed at once, so an interrupted
  run resumes where it stopped: lines already there are skipped (except failed model calls, which
  are tried again), and results are not kept in memory, so memory stays flat over 10,000 cases;
- `trials=k` runs each case k times with seeds seed, seed+1, ..., so pass@1 and pass^k can be
  reported together; `make_model(seed)` builds a model for each trial *and worker*, so every worker
  has its own connection pool: `HTTPModels("sim-noisy-{seed}", ...)` does that for HTTP. (One httpx
  client shared by 32 conversations spends about 3x the CPU per request: its pool scans every
  connection on each request and keeps only 20 alive; see measurements/README.md);
- a progress bar (tqdm; `tqdm.auto` picks the notebook widget in Jupyter); `progress=` a dict passes
  tqdm options, e.g. {"bar_format": "{desc}: {n_fmt}/{total_fmt} {bar}"} for a bar without timings.

A model call that fails after HTTPModel's retries is recorded with label "provider_error" and the run
goes on — unless it says no further call can succeed (a refused key, an unknown model, a server that
refuses connections), which stops the run with `BenchAborted` and a one-line reason.

Left out on purpose: adaptive concurrency, cost budgets that stop a run, and distributing work itself
(`--shard i/n` splits the cases; `report` merges the files).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AuthenticationError, ProviderError, RunError
from ..execute import AsyncioExecutor
from ..loop import arun
from .suites import Case

RECORD_VERSION = 1
MODE = "native tool calling"


class BenchAborted(RuntimeError):
    """No further case can succeed (bad key, unknown model, unreachable server, missing recording)."""


@dataclass
class RateLimit:
    """At most `per_minute` model calls a minute (or `per_second` a second), evenly spaced, `burst` at once.

    `clock` and `sleep` are injectable so a test can check the spacing without waiting."""

    per_minute: float | None = None
    per_second: float | None = None
    burst: int = 1
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Any] = asyncio.sleep
    _next: float = field(default=float("-inf"), init=False, repr=False)
    _lock: asyncio.Lock | None = field(default=None, init=False, repr=False)

    @property
    def interval(self) -> float:
        rate = self.per_second if self.per_second is not None else (self.per_minute or 0) / 60
        if rate <= 0:
            raise ValueError("RateLimit needs per_minute or per_second > 0")
        return 1.0 / rate

    async def acquire(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            now = self.clock()
            earliest = max(self._next, now - (self.burst - 1) * self.interval)
            self._next = earliest + self.interval
            wait = earliest - now
        if wait > 0:
            await self.sleep(wait)


class HTTPModels:
    """`make_model` for run_benchmark: a new HTTPModel per worker and trial, each on its own httpx
    client (its own connection pool), all sharing one TLS context (httpx builds one per client).

        make_model = HTTPModels("sim-noisy-{seed}", "anthropic", base_url=..., api_key=..., max_retries=3)

    "{seed}" in the name becomes the trial's seed. Other keywords go to HTTPModel. The clients are
    closed by `aclose()`, which run_benchmark calls at the end of a run.
    """

    def __init__(self, model: str, format: str = "openai-chat", **http_model_options: Any):
        self.model, self.format, self.options = model, format, http_model_options
        self._tls: Any = None
        self._clients: list[Any] = []

    def __call__(self, seed: int) -> Any:
        import httpx

        from ..http import HTTPModel

        if self._tls is None:  # certificates are loaded only for https (that alone takes ~20-50 ms)
            plain = str(self.options.get("base_url") or "").startswith("http://")
            self._tls = httpx.create_ssl_context(verify=not plain)
        client = httpx.AsyncClient(verify=self._tls, timeout=self.options.get("timeout", 60.0))
        self._clients.append(client)
        options = {"seed": seed, **self.options}
        return HTTPModel(self.model.replace("{seed}", str(seed)), self.format, async_client=client, **options)

    async def aclose(self) -> None:
        clients, self._clients = self._clients, []
        for client in clients:
            await client.aclose()


class _Throttled:
    """A model whose every call first waits for the provider's RateLimit."""

    def __init__(self, model: Any, rate: RateLimit):
        self.model, self.rate = model, rate

    async def acomplete(self, messages, tools, options):
        await self.rate.acquire()
        if hasattr(self.model, "acomplete"):
            return await self.model.acomplete(messages, tools, options)
        return await asyncio.to_thread(self.model.complete, messages, tools, options)


@dataclass
class Summary:
    """What one call of run_benchmark did (the results themselves are in the JSONL file)."""

    planned: int = 0
    skipped: int = 0  # already in the file
    done: int = 0
    passed: int = 0
    errors: int = 0  # provider_error records written this time
    seconds: float = 0.0
    out: str | None = None


def read_records(path: str | os.PathLike) -> list[dict]:
    """Every complete line of a results file (a line cut short by an interrupted run is ignored)."""
    records = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and "case" in record:
                    records.append(record)
    except FileNotFoundError:
        pass
    return records


def record_key(record: dict) -> tuple:
    return record.get("model"), record.get("suite"), record.get("case"), record.get("trial")


async def run_benchmark(cases: Iterable[Case], model: Any = None, *, out: str | os.PathLike | None = None,
                        label: str | None = None, provider: str | None = None, trials: int = 1,
                        concurrency: int = 8, seed: int = 0, rate: RateLimit | None = None,
                        make_model: Callable[[int], Any] | None = None, stream: bool = False,
                        progress: bool | dict = True, on_record: Callable[[dict], None] | None = None,
                        replayed: bool = False) -> Summary:
    """Run every (case, trial) not yet in `out`; see the module docstring."""
    if (model is None) == (make_model is None):
        raise ValueError("give either model= or make_model=")
    if trials < 1 or concurrency < 1:
        raise ValueError("trials and concurrency must be >= 1")
    label = label or getattr(model, "model", None) or "model"
    provider = provider or getattr(model, "format", None)
    cases = list(cases)
    finished = {record_key(r) for r in read_records(out) if r.get("label") != "provider_error"} if out else set()
    todo = [(case, trial) for trial in range(trials) for case in cases
            if (label, case.suite, case.id, trial) not in finished]
    summary = Summary(planned=len(cases) * trials, out=str(out) if out else None)
    summary.skipped = summary.planned - len(todo)
    models: dict[tuple[int, int], Any] = {}

    def model_for(trial: int, worker: int) -> Any:
        key = (trial, worker) if make_model is not None else (0, 0)
        if key not in models:
            chosen = model if model is not None else make_model(seed + trial)
            models[key] = _Throttled(chosen, rate) if rate is not None else chosen
        return models[key]

    started = time.perf_counter()
    writer = _Appender(out) if out else None
    bar = _progress(len(todo), label, progress if isinstance(progress, dict) else {}) if progress else None
    executor = AsyncioExecutor()  # one tool pool for the whole benchmark, not one per case
    queue = iter(todo)
    aborted: list[BaseException] = []

    async def worker(number: int) -> None:
        for case, trial in queue:  # a shared iterator: each item goes to exactly one worker
            if aborted:
                return
            try:
                record = await _run_one(case, trial, seed + trial, model_for(trial, number), label, provider,
                                        stream, executor)
            except BenchAborted as exc:  # the other workers stop at their next case; the run raises it
                aborted.append(exc)
                return
            if replayed:
                record["replayed"] = True
            if writer is not None:
                writer.write(record)
            if on_record is not None:
                on_record(record)
            summary.done += 1
            summary.passed += bool(record["ok"])
            summary.errors += record["label"] == "provider_error"
            if bar is not None:
                bar.update(1)

    try:
        await asyncio.gather(*(worker(n) for n in range(min(concurrency, max(1, len(todo))))))
    finally:
        executor.close()
        if hasattr(make_model, "aclose"):
            await make_model.aclose()
        if bar is not None:
            bar.close()
        if writer is not None:
            writer.close()
        summary.seconds = time.perf_counter() - started
    if aborted:
        raise aborted[0]
    return summary


async def _run_one(case: Case, trial: int, seed: int, model: Any, label: str, provider: str | None,
                   stream: bool, executor: AsyncioExecutor) -> dict:
    setup = case.start(provider)  # the wire format: BFCL cases send BFCL's request in its style
    started = time.perf_counter()
    error: BaseException | None = None
    with _attempts_recorded(model) as attempts:  # every HTTP try of this case's calls, retries included
        try:
            if setup.drive is not None:  # a multi-turn case plays its turns itself, through arun
                run = await setup.drive(model, stream=stream)
            else:
                run = await arun(model, setup.messages, tools=setup.tools, limits=setup.limits,
                                 stream=stream, executor=executor)
        except RunError as exc:  # the model call failed after HTTPModel's retries (the run is partial)
            run, error = exc.run, exc
    latency = time.perf_counter() - started
    record = {"v": RECORD_VERSION, "model": label, "provider": provider, "mode": MODE, "suite": case.suite,
              "category": case.category, "case": case.id, "trial": trial, "seed": seed}
    if error is not None:
        cause = error.__cause__ or error
        fatal = _fatal(cause)
        if fatal:
            raise BenchAborted(fatal)
        verdict = {"ok": False, "label": "provider_error", "detail": f"{type(cause).__name__}: {cause}"[:300]}
    else:
        verdict = setup.judge(run).to_dict()
    usage = run.usage if run is not None else None
    record.update(verdict)
    record.update({
        "stop_reason": str(run.stop_reason) if run is not None else None,
        "steps": run.steps if run is not None else 0,
        "tool_calls": emitted_calls(run),
        "latency_ms": round(latency * 1000, 3),
        "input_tokens": usage.input_tokens if usage else 0,
        "output_tokens": usage.output_tokens if usage else 0,
        "answer": run.output[:500] if run is not None and isinstance(run.output, str) else None,
    })
    if attempts is not None:  # an HTTPModel: what the transport cost (the format x fault matrix reads these)
        record.update(attempt_counts(attempts))
    if setup.details is not None:  # e.g. a multi-turn case's trajectory
        record.update(setup.details(run) if run is not None else {})
    return record


def emitted_calls(run: Any) -> int:
    """Tool calls the model sent (valid or not, run or not): counted from the conversation itself."""
    if run is None:
        return 0
    return sum(len(m.tool_calls) for m in run.new_messages if m.role == "assistant")


def _attempts_recorded(model: Any) -> Any:
    """HTTPModel.record_attempts() for this case (a model without HTTP: a context that yields None)."""
    inner = model.model if isinstance(model, _Throttled) else model
    return inner.record_attempts() if hasattr(inner, "record_attempts") else contextlib.nullcontext()


def attempt_counts(attempts: list) -> dict:
    """HTTP attempts of a case: all of them, the retries (attempts after the first of a model call) and
    the failed ones (an error status, a broken connection or stream, a bad body)."""
    return {"attempts": len(attempts), "retries": len(attempts) - len({a.call for a in attempts}),
            "failed_attempts": sum(not a.ok for a in attempts)}


def _fatal(error: BaseException) -> str | None:
    """A one-line reason when no later call can succeed either; None for a failure of this case only."""
    if isinstance(error, AuthenticationError):
        return f"the provider refused the API key ({error.status}): check the key variable for this provider"
    if isinstance(error, ProviderError) and error.status == 404:
        return f"the provider does not know this model or route (404): {error.message}"[:300]
    if isinstance(error, ProviderError) and error.error_type in ("ConnectError", "ConnectTimeout"):
        return f"cannot reach the server: {error.message}"[:300]
    if type(error).__name__ == "CannotOverwriteExistingCassetteException":
        return ("the recording has no answer for a request of this run: replay with the same suites, "
                "--limit, --trials, --shard and model as the recording")
    return None


class _Appender:
    """Appends one JSON line per record and flushes it, so a crash loses at most the line being written."""

    def __init__(self, path: str | os.PathLike):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        cut_short = False
        if path.exists() and path.stat().st_size > 0:  # an interrupted run may have left half a line
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                cut_short = f.read(1) != b"\n"
        self.file = open(path, "a", encoding="utf-8")
        if cut_short:
            self.file.write("\n")

    def write(self, record: dict) -> None:
        self.file.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def _progress(total: int, label: str, options: dict) -> Any:
    from ..extras import need

    tqdm = need("tqdm.auto", "bench", "a benchmark run's progress bar").tqdm
    return tqdm(**{"total": total, "desc": label, "unit": "case", "leave": True, "dynamic_ncols": True, **options})
