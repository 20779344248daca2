"""Does the report's noise floor say the truth? Coverage of pass@1's interval on a seeded stochastic preset.

    python benchmarks/noise_floor.py                     # 100 cases, 100 seeds, 400 repeated runs per k
    python benchmarks/noise_floor.py --cases 60 --seeds 60 --runs 200

The preset is the simulator's `sim-noisy-SEED` (the reasoner with reproducible mistakes on 25 % of
calls, decided by a hash of the seed and the request): a run with seed s always gives the same
outcomes, so the outcome of every (case, seed) is measured once, through `run_benchmark` and the loop
(the model answers in-process, `OracleModel(model=...)`, no HTTP), and a "repeated run" with k
trials is k seeds drawn from them — exactly the records that run would write.

The preset's true pass rate on these cases is the mean over all seeds (its own standard error is
printed). For each k, `--runs` runs of k random seeds each; the script prints how often the report's 95 %
interval (noise.bootstrap_interval over the run's per-case rates) contains the true rate (target:
>= 95 %), how often two runs of the same preset are called "inside the noise" (target: >= 95 %), and
whether the reasoner without noise is told apart from the noisy preset.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentkit.bench import noise  # noqa: E402
from agentkit.bench.oracle import OracleModel  # noqa: E402
from agentkit.bench.runner import run_benchmark  # noqa: E402
from agentkit.bench.suites import load_cases  # noqa: E402


def outcomes(cases, name: str) -> dict[str, bool]:
    got: dict[str, bool] = {}
    asyncio.run(run_benchmark(cases, OracleModel(model=name), label=name, provider="openai-chat", concurrency=8,
                              progress=False, on_record=lambda r: got.__setitem__(r["case"], r["ok"])))
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default="bfcl:simple_python,bfcl:multiple")
    parser.add_argument("--cases", type=int, default=100, help="cases in all (split over the suite's categories)")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--runs", type=int, default=400, help="repeated runs per k")
    args = parser.parse_args()

    categories = args.suite.count(",") + 1
    cases = load_cases(args.suite, limit=args.cases // categories)
    started = time.perf_counter()
    matrix = {seed: outcomes(cases, f"sim-noisy-{seed}") for seed in range(args.seeds)}
    plain = outcomes(cases, "sim-reasoner")
    ids = [c.id for c in cases]
    per_case = [statistics.fmean(matrix[s][i] for s in matrix) for i in ids]
    truth = statistics.fmean(per_case)
    error = statistics.stdev(statistics.fmean(matrix[s][i] for i in ids) for s in matrix) / len(matrix) ** 0.5
    print(f"{len(ids)} cases ({args.suite}) x {args.seeds} seeds of sim-noisy-SEED measured in "
          f"{time.perf_counter() - started:.1f} s")
    print(f"true pass rate {truth:.2%} (standard error of that estimate {error:.2%}); cases never / always / "
          f"sometimes passed: {sum(p == 0 for p in per_case)} / {sum(p == 1 for p in per_case)} / "
          f"{sum(0 < p < 1 for p in per_case)}; sim-reasoner without noise: {statistics.fmean(plain.values()):.2%}")

    rng = random.Random(1)
    for k in (1, 3, 5):
        covered = inside = apart = 0
        widths = []
        for _ in range(args.runs):
            first, second = rng.sample(range(args.seeds), k), rng.sample(range(args.seeds), k)
            run = {(i,): [matrix[s][i] for s in first] for i in ids}
            other = {(i,): [matrix[s][i] for s in second] for i in ids}
            low, high = noise.model_floor(run)["interval"]
            covered += low <= truth <= high
            widths.append(high - low)
            inside += noise.compare(run, other)["inside_noise"]
            apart += not noise.compare({(i,): [plain[i]] * k for i in ids}, run)["inside_noise"]
        print(f"k={k}: interval covers the true rate in {covered}/{args.runs} runs ({covered / args.runs:.1%}), "
              f"mean width {statistics.fmean(widths):.1%}; two runs of the preset 'inside the noise' in "
              f"{inside}/{args.runs} ({inside / args.runs:.1%}); reasoner vs preset told apart in "
              f"{apart}/{args.runs}")
    print(f"total {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
