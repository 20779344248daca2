"""House rule for the engine's tests: no assertion on wall-clock time.

A busy machine makes any time threshold flake. Parallelism, order and timeouts are asserted from the
trace's events (who started before whom ended), from barriers that only open when calls overlap, and from
tools that are still running when their timeout came back; seconds belong to benchmarks/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ENGINE_TESTS = ["test_loop.py", "test_loop_properties.py", "test_execute.py", "test_tools.py", "test_validate.py",
                "test_policies.py", "test_trace.py", "test_types.py", "test_models.py", "test_strict.py",
                "test_fixtures.py"]
CLOCKS = re.compile(r"\b(?:time\.(?:perf_counter|monotonic|time|process_time)(?:_ns)?\(\)|timed\()")


@pytest.mark.parametrize("name", ENGINE_TESTS)
def test_no_engine_test_reads_a_clock_to_assert_on_it(name):
    readings = [f"{name}:{n}: {line.strip()}" for n, line in enumerate((HERE / name).read_text().splitlines(), 1)
                if CLOCKS.search(line)]
    assert readings == [], "assert order and overlap from the trace instead:\n" + "\n".join(readings)
