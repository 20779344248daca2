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
- the file starts with the run's configuration (`results.run_config`: model, format, base URL, seed,
  streaming, options, the scorer's version) and every record carries its case's version; a run whose
  configuration differs from the file's, or whose cases changed since, raises `ConfigMismatch` naming
  the differences instead of appending (`check_resume`; `config=` adds what the caller knows, e.g.
  {"base_url": "sim"} for a simulator on a new port each run);
- every record is scrubbed of the keys the run holds (`secrets=`, and the provider key variables)
  before it is written: a server that echoes headers cannot put a key into the file;
- the progress line shows, live, the attempts that failed and were retried, the timeouts among them,
  and the trials lost to provider errors (not scored), so a slow server is visible while it is slow;
- `trials=k` runs each case k times with seeds seed, seed+1, ..., so pass@1 and pass^k can be
  reported together; `make_model(seed)` builds a model for each trial *and worker*, so every worker
  has its own connection pool: `HTTPModels("sim-noisy-{seed}", ...)` does that for HTTP. (One httpx
  client shared by 32 conversations spends about 3x the CPU per request: its pool scans every
  connection on each request and keeps only 20 alive; see benchmarks/README.md);
- a progress bar (tqdm; `tqdm.auto` picks the notebook widget in Jupyter); `progress=` a dict passes
  tqdm options, e.g. {"bar_format": "{desc}: {n_fmt}/{total_fmt} {bar}"} for a bar without timings;
- every request carries BFCL's generation settings (`bfcl.GENERATION`: temperature 0.001) unless
  `generation=` says otherwise ({} sends none: the provider's defaults); the run line records them;
- the case being played is `oracle.CURRENT_CASE` while it runs, so an oracle answers by case
  (`HTTPModels(..., send_case=True)` sends it to a simulator as the `x-agentkit-case` header).

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
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.drive import arun
from ..core.errors import AuthenticationError, ProviderError, RunError
from ..core.execute import AsyncioExecutor
from .bfcl import GENERATION, generating
from .oracle import CURRENT_CASE
from .results import (
    RECORD_VERSION,
    ConfigMismatch,
    Results,
    case_version,
    differences,
    merged_config,
    read_results,
    run_config,
    scrub_keys,
)
from .suites import Case

MODE = "native tool calling"
__all__ = ["BenchAborted", "ConfigMismatch", "HTTPModels", "RateLimit", "Summary", "check_resume", "read_records",
           "run_benchmark", "RECORD_VERSION", "MODE"]


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
    closed by `aclose()`, which run_benchmark calls at the end of a run. `send_case=True` adds the case
    being played to every request (header `x-agentkit-case`): for a simulator whose oracle answers by
    case; a provider has no use for it.
    """

    def __init__(self, model: str, format: str = "openai-chat", *, send_case: bool = False,
                 **http_model_options: Any):
        self.model, self.format, self.options = model, format, http_model_options
        self.send_case = send_case
        self._tls: Any = None
        self._clients: list[Any] = []

    def __call__(self, seed: int) -> Any:
        import httpx

        from ..http.model import HTTPModel

        if self._tls is None:  # certificates are loaded only for https (that alone takes ~20-50 ms)
            plain = str(self.options.get("base_url") or "").startswith("http://")
            self._tls = httpx.create_ssl_context(verify=not plain)
        hooks = {"request": [_add_case_header]} if self.send_case else {}
        client = httpx.AsyncClient(verify=self._tls, timeout=self.options.get("timeout", 60.0), event_hooks=hooks)
        self._clients.append(client)
        options = {"seed": seed, **self.options}
        return HTTPModel(self.model.replace("{seed}", str(seed)), self.format, async_client=client, **options)

    async def aclose(self) -> None:
        clients, self._clients = self._clients, []
        for client in clients:
            await client.aclose()


async def _add_case_header(request: Any) -> None:
    from ..sim.wire.common import CASE_HEADER

    case = CURRENT_CASE.get()
    if case:
        request.headers[CASE_HEADER] = case


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
    timeouts: int = 0  # ... of which the model call ran out of time (ProviderTimeout)
    seconds: float = 0.0
    out: str | None = None


def read_records(path: str | os.PathLike) -> list[dict]:
    """Every good record of a results file (damaged lines and a line cut short are skipped: see results.py)."""
    return read_results(path).records


def record_key(record: dict) -> tuple:
    return record.get("model"), record.get("suite"), record.get("case"), record.get("trial")


async def run_benchmark(cases: Iterable[Case], model: Any = None, *, out: str | os.PathLike | None = None,
                        label: str | None = None, provider: str | None = None, trials: int = 1,
                        concurrency: int = 8, seed: int = 0, rate: RateLimit | None = None,
                        make_model: Callable[[int], Any] | None = None, stream: bool = False,
                        progress: bool | dict = True, on_record: Callable[[dict], None] | None = None,
                        replayed: bool = False, config: dict | None = None,
                        secrets: Iterable[str | None] = (), generation: dict | None = None) -> Summary:
    """Run every (case, trial) not yet in `out`; see the module docstring."""
    if (model is None) == (make_model is None):
        raise ValueError("give either model= or make_model=")
    if trials < 1 or concurrency < 1:
        raise ValueError("trials and concurrency must be >= 1")
    label = label or getattr(model, "model", None) or "model"
    provider = provider or getattr(model, "format", None)
    cases = list(cases)
    secrets = list(secrets)
    generation = dict(GENERATION) if generation is None else dict(generation)
    this_run, versions, previous = check_resume(out, cases, label=label, provider=provider, stream=stream, seed=seed,
                                                config=config, secrets=secrets, concurrency=concurrency, rate=rate,
                                                source=model if model is not None else make_model,
                                                generation=generation)
    finished = {record_key(r) for r in previous.records if r.get("label") != "provider_error"} if previous else set()
    todo = [(case, trial) for trial in range(trials) for case in cases
            if (label, case.suite, case.id, trial) not in finished]
    summary = Summary(planned=len(cases) * trials, out=str(out) if out else None)
    summary.skipped = summary.planned - len(todo)
    models: dict[tuple[int, int], Any] = {}
    def scrub(record: dict) -> dict:
        return scrub_keys(record, secrets)

    bar = _progress(len(todo), label, progress if isinstance(progress, dict) else {}) if progress else None
    tally = _Tally(bar)
    restore: list[tuple[Any, Any]] = []  # a model of yours gets its on_attempt hook back at the end

    def model_for(trial: int, worker: int) -> Any:
        key = (trial, worker) if make_model is not None else (0, 0)
        if key not in models:
            chosen = model if model is not None else make_model(seed + trial)
            if hasattr(chosen, "on_attempt"):
                restore.append((chosen, chosen.on_attempt))
                chosen.on_attempt = tally.watching(chosen.on_attempt)
            chosen = generating(chosen, generation)  # BFCL's temperature on every request (or the run's own)
            models[key] = _Throttled(chosen, rate) if rate is not None else chosen
        return models[key]

    started = time.perf_counter()
    writer = _Appender(out) if out and todo else None
    if writer is not None:
        writer.write(scrub({"run": this_run, "v": RECORD_VERSION}))
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
                record["case_version"] = versions[(case.suite, case.category, case.id)]
            except BenchAborted as exc:  # the other workers stop at their next case; the run raises it
                aborted.append(exc)
                return
            if replayed:
                record["replayed"] = True
            record = scrub(record)
            if writer is not None:
                writer.write(record)
            if on_record is not None:
                on_record(record)
            summary.done += 1
            summary.passed += bool(record["ok"])
            summary.errors += record["label"] == "provider_error"
            summary.timeouts += record["label"] == "provider_error" and str(record.get("detail")).startswith(
                "ProviderTimeout")
            tally.finished(record)

    try:
        await asyncio.gather(*(worker(n) for n in range(min(concurrency, max(1, len(todo))))))
    finally:
        executor.close()
        for chosen, hook in restore:
            chosen.on_attempt = hook
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
    playing = CURRENT_CASE.set(case.id)  # the oracle answers by case (categories share questions)
    with contextlib.ExitStack() as stack:
        stack.callback(CURRENT_CASE.reset, playing)
        attempts = stack.enter_context(_attempts_recorded(model))  # every HTTP try, retries included
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
    inner = model.model if isinstance(model, _Throttled) else model  # (a Generating model passes it through)
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
    """Appends one JSON line per record and flushes it, so a crash loses at most the line being written.

    Half a line left by an interrupted run is cut off first: its case runs again, and the file stays clean."""

    def __init__(self, path: str | os.PathLike):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "ab")
        size = self.file.seek(0, os.SEEK_END)
        if size:
            with open(path, "rb") as f:  # the last MiB is enough: a record line is a few hundred bytes
                f.seek(max(0, size - (1 << 20)))
                tail = f.read()
            if not tail.endswith(b"\n"):
                cut = tail.rfind(b"\n")
                self.file.truncate(size - len(tail) + cut + 1 if cut >= 0 else size - len(tail))

    def write(self, record: dict) -> None:
        self.file.write((json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def check_resume(out: str | os.PathLike | None, cases: list[Case], *, label: str, provider: str | None = None,
                 stream: bool = False, seed: int = 0, config: dict | None = None, secrets: Iterable[str | None] = (),
                 concurrency: int = 8, rate: RateLimit | None = None, source: Any = None,
                 generation: dict | None = None) -> tuple[dict, dict[tuple[str, str, str], str], Results | None]:
    """This run's configuration, its cases' versions, and what `out` holds; `ConfigMismatch` when `out` holds
    another run's results (or a file that is not a results file). The command line calls it before it
    starts anything; run_benchmark calls it again, for callers of its own."""
    # Compared as it is written: a base URL's ?key= is masked in the file, so it is masked here too.
    chosen = dict(GENERATION) if generation is None else dict(generation)
    this_run = scrub_keys(_config(cases, label, provider, source, stream, seed, concurrency, rate, config or {},
                                  chosen), list(secrets))
    versions = {(c.suite, c.category, c.id): case_version(c) for c in cases}
    previous = read_results(out) if out else None
    if previous is not None and (previous.records or previous.runs or previous.warnings):  # a file not ours too
        found = differences(merged_config(previous.runs), this_run, previous.records, versions)
        if found:
            raise ConfigMismatch(f"{out} holds results of another run configuration ({'; '.join(found)}): "
                                 "choose another --label or --out, or move the file away")
    return this_run, versions, previous


def _config(cases: list[Case], label: str, provider: str | None, source: Any, stream: bool, seed: int,
            concurrency: int, rate: RateLimit | None, given: dict, generation: dict) -> dict:
    """This run's configuration: what the caller says (`given`), else what the model or factory tells."""
    options = getattr(source, "options", None) or {}
    transport = {"concurrency": concurrency, "rpm": (60 / rate.interval) if rate is not None else None,
                 "timeout": options.get("timeout", getattr(source, "_attempt_timeout", None)),
                 "max_retries": options.get("max_retries", getattr(source, "max_retries", None))}
    base_url = given.get("base_url", options.get("base_url", getattr(source, "base_url", None)))
    return run_config(cases, label=label, provider=given.get("format", provider),
                      model=given.get("model", getattr(source, "model", None)), base_url=base_url,
                      stream=stream, seed=seed, options=given.get("options"),
                      transport={**transport, **given.get("transport", {})}, generation=generation)


class _Tally:
    """Counts, for the progress line, failed attempts (each one retried or the last), timeouts, lost trials."""

    TIMEOUTS = ("timeout", "stalled", "total_timeout")

    def __init__(self, bar: Any):
        self.bar, self.counts = bar, Counter()

    def watching(self, previous: Callable[[Any], None] | None) -> Callable[[Any], None]:
        def seen(attempt: Any) -> None:
            if getattr(attempt, "error", None) is not None:
                self.counts["failed attempts"] += 1
                self.counts["timeouts"] += getattr(attempt, "error_type", None) in self.TIMEOUTS
                self._show()
            if previous is not None:
                previous(attempt)
        return seen

    def finished(self, record: dict) -> None:
        self.counts["not scored"] += record["label"] == "provider_error"
        if self.bar is not None:
            self.bar.update(1)
            self._show()

    def _show(self) -> None:
        if self.bar is not None and self.counts:
            self.bar.set_postfix({k: self.counts[k] for k in ("failed attempts", "timeouts", "not scored")},
                                 refresh=True)


def _progress(total: int, label: str, options: dict) -> Any:
    from ..extras import need

    tqdm = need("tqdm.auto", "bench", "a benchmark run's progress bar").tqdm
    return tqdm(**{"total": total, "desc": label, "unit": "case", "leave": True, "dynamic_ncols": True, **options})
