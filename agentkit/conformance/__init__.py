"""Does your loop survive the real APIs? Run it against the simulator in every format and hear which provider
rules it breaks.

    python -m agentkit.conformance run -- python my_agent.py        # any loop, any language, by command
    python -m agentkit.conformance run --formats anthropic,gemini --scenarios parallel --json out.json -- ...
    python -m agentkit.conformance scenarios                        # what each scenario does
    python -m agentkit.conformance rules --format anthropic         # the rules it checks, and their sources

    from agentkit.conformance import check
    report = check(my_loop, formats=["anthropic"])                  # a loop given as a function
    assert report.exit_code == 0, report.table()

A scenario is a model behaviour over several requests (one call then an answer, parallel calls, a tool that
fails, reasoning state, a 429 mid-run, a spend limit...), played on whatever tools the loop declares. The
simulator checks every request the loop sends against the fidelity ledger's rules, as the real API would:
a request the API refuses is refused in its words; one it accepts with a worse result (a dropped `phase`,
thinking dropped) is accepted and recorded as degraded. The report lists, per format and scenario, every
refusal and degradation with the request and message it happened at.

    scenarios.py   which scenarios run in which format, and the model that plays each
    runner.py      the Target a loop is pointed at, `check` (a function) and `run_command` (a command)
    report.py      the records and the table: what the simulator's rule logs say about the loop

Left out on purpose: serving HTTP (the simulator's, `agentkit.sim`), and the rules themselves (the ledger).
"""

from .report import Record, Report, Run
from .runner import DEFAULT_TIMEOUT, Target, check, environment, run_command
from .scenarios import plan

__all__ = ["DEFAULT_TIMEOUT", "Record", "Report", "Run", "Target", "check", "environment", "plan", "run_command"]
