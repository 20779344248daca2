"""Run a loop once per (format, scenario) against the simulator, and read back what each request was checked against.

    report = check(my_loop, formats=["anthropic"], scenarios=["parallel"])   # a function: my_loop(target)
    report = run_command(["python", "my_agent.py"])                          # a command, in a subprocess

Either way the loop is told where to go by a `Target`: the format, the scenario's model name, the
simulator's base URL for agentkit (`base_url`) and for the format's official SDK (`sdk_base_url`), and
`env`, the environment a command runs with:

    AGENTKIT_PROVIDER, AGENTKIT_BASE_URL, AGENTKIT_MODEL    what `HTTPModel.from_env()` reads
    OPENAI_BASE_URL, ANTHROPIC_BASE_URL,                    what the official SDKs read (openai, anthropic,
    GOOGLE_GEMINI_BASE_URL, OLLAMA_HOST                     google-genai, ollama), pointed at the simulator
    OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY,      dummy keys, so a real key in your shell is never
    OPENROUTER_API_KEY                                      sent anywhere

Every SDK's base URL points at the simulator in every run (OPENAI_BASE_URL at the format's own path: /v1,
or /api/v1 for OpenRouter), so a loop that picks the wrong client still cannot reach a real API.

A run that raises (a command that exits non-zero), that is still going after `timeout` seconds, or that
never calls the simulator is reported as such (`report.Run.ended`), and the check goes on to the next.

Left out on purpose: running the (format, scenario) pairs at once (each run's requests are told apart by
their model name and order, and a loop's own concurrency is part of what is checked).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..sim.server import SimServer, base_url_on, sdk_base_path, serve
from .report import Report, Run, ended_as, records_of
from .scenarios import Pick, plan

__all__ = ["DEFAULT_TIMEOUT", "Target", "check", "environment", "run_command"]

#: Seconds one (format, scenario) may take before it is reported as hung.
DEFAULT_TIMEOUT = 60.0
DUMMY_KEY = "sk-conformance-dummy"
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY")
#: Keys that would go to a real API in place of the dummies, or make an SDK choose another: cleared.
_CLEARED = ("GOOGLE_API_KEY", "OLLAMA_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "GOOGLE_GENAI_USE_VERTEXAI")


@dataclass(frozen=True)
class Target:
    """Where one (format, scenario) run goes: what a loop function is given, and what a command reads from
    its environment (`env`)."""

    format: str
    scenario: str
    model: str
    base_url: str  # what agentkit's HTTPModel wants (base_url=)
    sdk_base_url: str  # what the format's official SDK wants (base_url=, host=)
    env: dict[str, str] = field(repr=False, default_factory=dict)


def environment(server_url: str, fmt: str, model: str) -> dict[str, str]:
    """The variables a command runs with for one (format, scenario) (see the module docstring)."""
    openai_path = sdk_base_path(fmt) if fmt in ("openai-chat", "openai-responses", "openrouter") else "/v1"
    return {
        "AGENTKIT_PROVIDER": fmt,
        "AGENTKIT_BASE_URL": base_url_on(server_url, fmt),
        "AGENTKIT_MODEL": model,
        "OPENAI_BASE_URL": server_url + openai_path,
        "ANTHROPIC_BASE_URL": server_url + sdk_base_path("anthropic"),
        "GOOGLE_GEMINI_BASE_URL": server_url + sdk_base_path("gemini"),
        "OLLAMA_HOST": server_url + sdk_base_path("ollama"),
        **dict.fromkeys(_KEYS, DUMMY_KEY),
    }


def _brief(text: str, limit: int = 240) -> str:
    """One line of at most `limit` characters (a loop's error can carry a whole response body)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def target(server: SimServer, pick: Pick) -> Target:
    return Target(pick.format, pick.scenario, pick.model, server.base_url(pick.format),
                  server.sdk_base_url(pick.format), environment(server.url, pick.format, pick.model))


def _last_request(server: SimServer) -> int:
    return max((log.number for log in server.rule_logs()), default=0)


def _read_run(server: SimServer, pick: Pick, after: int, *, exited_badly: bool, hung: bool, detail: str) -> Run:
    """The run's requests (those after `after` with its format and model name) and what they found."""
    logs = [log for log in server.rule_logs(after=after) if log.format == pick.format and log.model == pick.model]
    records = records_of(pick.format, pick.scenario, logs)
    ended = "hung" if hung else ended_as(pick.scenario, exited_badly, records, len(logs))
    return Run(pick.format, pick.scenario, pick.model, ended, len(logs), detail, records)


def _each_run(formats: Sequence[str] | None, scenarios: Sequence[str] | None,
              one: Callable[[SimServer, Pick], Run]) -> Report:
    picks = plan(list(formats or ()), list(scenarios or ()))
    server = serve()
    try:
        return Report([one(server, pick) for pick in picks])
    finally:
        server.stop()


def check(loop: Callable[[Target], object], formats: Sequence[str] | None = None,
          scenarios: Sequence[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> Report:
    """Call `loop(target)` once per (format, scenario) and report what its requests broke.

        def my_loop(target):
            model = HTTPModel(target.model, target.format, base_url=target.base_url)
            agentkit.run(model, "What is the weather in Paris?", [get_weather])

        report = check(my_loop, formats=["openai-chat", "anthropic"])
        assert report.exit_code == 0, report.table()

    The loop runs in a thread of its own: one that raises is reported with its exception, one still going
    after `timeout` seconds is reported as hung and left behind (a thread cannot be stopped from outside),
    and its later requests are not counted in any other run.
    """
    def one(server: SimServer, pick: Pick) -> Run:
        after, where = _last_request(server), target(server, pick)
        raised: list[BaseException] = []

        def call() -> None:
            try:
                loop(where)
            except BaseException as error:  # noqa: BLE001 - the loop's failure is what is reported
                raised.append(error)

        thread = threading.Thread(target=call, daemon=True, name=f"conformance:{pick.format}:{pick.scenario}")
        thread.start()
        thread.join(timeout)
        detail = (f"still running after {timeout:g} s" if thread.is_alive()
                  else _brief(f"raised {type(raised[0]).__name__}: {raised[0]}") if raised else "")
        return _read_run(server, pick, after, exited_badly=bool(raised), hung=thread.is_alive(), detail=detail)

    return _each_run(formats, scenarios, one)


def run_command(command: Sequence[str], formats: Sequence[str] | None = None,
                scenarios: Sequence[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> Report:
    """Run `command` once per (format, scenario) with the Target's environment, and report.

    A command still running after `timeout` seconds is stopped with its whole process group (what it
    started too) and reported as hung; its exit code and the last lines of its output go in `Run.detail`.
    """
    def one(server: SimServer, pick: Pick) -> Run:
        after = _last_request(server)
        env = {**{k: v for k, v in os.environ.items() if k not in _CLEARED},
               **target(server, pick).env}
        process = subprocess.Popen(list(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True, text=True, errors="replace")
        try:
            output, hung = process.communicate(timeout=timeout)[0], False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, hung = process.communicate()[0], True
        last = " | ".join(line.strip() for line in (output or "").strip().splitlines()[-3:])
        detail = (f"still running after {timeout:g} s, stopped" if hung
                  else _brief(f"exit code {process.returncode}" + (f": {last}" if last else "")))
        return _read_run(server, pick, after, exited_badly=process.returncode != 0, hung=hung, detail=detail)

    return _each_run(formats, scenarios, one)
