"""BFCL multi-turn, the whole set: the oracle through the loop over HTTP, and the checks against BFCL's own.

    python benchmarks/bfcl_multiturn.py                          # all 800 cases, 8 in flight, openai-chat
    python benchmarks/bfcl_multiturn.py --format anthropic --stream --limit 20

Part 1, the checks: every case's ground truth, and three perturbations of it (a wrong argument, a
missing call, an extra call), scored by `multiturn.score` and by BFCL's own `multi_turn_checker`
(imported from the cached wheel); the script prints how many verdicts agree (target: all) and how
many ground truths pass (target: all: the oracle's 100 %).

Part 2, the run: every case of the four categories played by the oracle through `run_benchmark`
(agentkit's loop, HTTPModel, the simulator on loopback, BFCL's back-ends), 8 cases in flight, one
simulator and oracle per category (categories share questions with different answers). Prints the
wall time (target < 10 min on 2 cores), the score per category (target 100 %), the results files' size,
and the resident set size after each category (flat: the runner keeps no results in memory).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentkit.bench import bfcl, multiturn  # noqa: E402
from agentkit.bench.oracle import serve_with_oracle  # noqa: E402
from agentkit.bench.runner import HTTPModels, read_records, run_benchmark  # noqa: E402
from agentkit.bench.suites import load_cases  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_bench_multiturn import BFCL_LABELS, PERTURBATIONS, truth_trajectory  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def checks(limit: int | None) -> None:
    checker = bfcl.import_from_wheel("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    agree = total = truth_ok = cases = 0
    labels: collections.Counter = collections.Counter()
    started = time.perf_counter()
    for category in multiturn.CATEGORIES:
        entries = {e["id"]: e for e in bfcl._read_lines(bfcl.cache_dir() / f"BFCL_v4_{category}.json")}
        for case in multiturn.load(category)[:limit]:
            cases += 1
            truth = truth_trajectory(case)
            for what, perturb in PERTURBATIONS.items():
                trajectory = perturb(truth)
                if trajectory is None:
                    continue
                ours = multiturn.score(case, trajectory).label
                decoded = [[[f"{n}({','.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in step]
                            for step in multiturn.decoded_steps(turn)] for turn in trajectory["turns"]]
                result = checker.multi_turn_checker(decoded, [list(t) for t in case.ground_truth],
                                                    entries[case.id], category, "bench_" + uuid.uuid4().hex)
                theirs = None if result["valid"] else BFCL_LABELS[result["error_type"]]
                total += 1
                agree += ours == theirs
                labels[(what, ours)] += 1
                truth_ok += what == "none" and ours is None
    print(f"checks: {cases} cases, {total} trajectories: {agree} verdicts agree with BFCL's checker; "
          f"{truth_ok}/{cases} ground truths pass; {time.perf_counter() - started:.1f} s")
    for (what, label), count in sorted(labels.items(), key=lambda x: (x[0][0], str(x[0][1]))):
        print(f"  {what:<15} {label or 'pass':<15} {count}")


def run(fmt: str, stream: bool, limit: int | None, concurrency: int) -> None:
    out = Path(tempfile.mkdtemp(prefix="bfcl-mt-"))
    print(f"run: oracle, {fmt}{' streamed' if stream else ''}, {concurrency} in flight, results in {out}")
    print(f"  RSS at start {rss_mb():.0f} MB")
    started = time.perf_counter()
    for category in multiturn.CATEGORIES:
        cases = load_cases(f"bfcl:{category}", limit=limit)
        t0 = time.perf_counter()
        with serve_with_oracle(cases) as server:
            make_model = HTTPModels("oracle", fmt, base_url=server.base_url(fmt), api_key="sim")
            summary = asyncio.run(run_benchmark(cases, make_model=make_model, out=out / f"{category}.jsonl",
                                                label="oracle", provider=fmt, concurrency=concurrency,
                                                stream=stream, progress=False))
        records = read_records(out / f"{category}.jsonl")
        failed = [(r["case"], r["label"]) for r in records if not r["ok"]]
        print(f"  {category:<24} {summary.passed}/{summary.done} pass  {time.perf_counter() - t0:6.1f} s  "
              f"{(out / f'{category}.jsonl').stat().st_size / 1e6:5.1f} MB  RSS {rss_mb():.0f} MB"
              + (f"  failed: {failed[:5]}" if failed else ""))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  total {time.perf_counter() - started:.1f} s, peak RSS {peak:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["checks", "run", "both"], default="both")
    parser.add_argument("--format", default="openai-chat")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--limit", type=int, help="the first N cases of each category")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    bfcl.fetch()
    if args.part in ("checks", "both"):
        checks(args.limit)
    if args.part in ("run", "both"):
        run(args.format, args.stream, args.limit, args.concurrency)


if __name__ == "__main__":
    main()
