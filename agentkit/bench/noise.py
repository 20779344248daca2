"""The noise floor: how much of a score is the luck of the draw, and whether two models really differ.

    from agentkit.bench import noise
    floor = noise.summary(records)          # per model: pass@1 with its 95 % interval, pass^k, flip rate
    floor["models"]["gpt-4.1"]["interval"]  # (0.71, 0.83)
    floor["pairs"][0]["inside_noise"]       # True: the two models' difference is within the noise

A score is an average over cases, and cases are a sample: another draw of cases (or, for a noisy
model, another draw of trials) gives another score. The interval says how far: a percentile bootstrap
over cases (resample the cases with replacement, take each resample's mean of per-case pass rates,
keep the middle 95 % of the means), seeded, so a report shows the same interval every time.

pass^k for k = 1 ... trials is tau-bench's chance that k trials of a case all pass (`pass_hat`).
The flip rate is the share of cases whose trials disagree (some pass, some fail): 0 for a
deterministic model, and the part of a score that is the model's own randomness rather than the cases.

Two models are compared on the cases both ran: the difference of their pass@1 with a paired bootstrap
interval (the same resampled cases for both). When that interval contains 0, the report says the
difference is inside the noise; when it ends exactly at 0 (+0.0 … +12.5), it says that instead: the
runs lean one way and do not show it (`bound_at_zero`).

How well the interval does what it says was measured on a seeded stochastic preset (sim-noisy-SEED,
whose runs are reproducible per seed): see benchmarks/noise_floor.py and benchmarks/README.md.

Left out on purpose: multiple-comparison corrections and significance tests by name; the interval is
the one number to read.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations

CONFIDENCE = 0.95
RESAMPLES = 1000
SEED = 0


def outcomes_by_case(records: Iterable[dict]) -> dict[str, dict[tuple, list[bool]]]:
    """model -> (suite, category, case) -> the trials' outcomes, in trial order."""
    out: dict[str, dict[tuple, list[tuple[int, bool]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        out[r["model"]][(r["suite"], r["category"], r["case"])].append((r.get("trial", 0), bool(r["ok"])))
    return {m: {c: [ok for _, ok in sorted(v)] for c, v in cases.items()} for m, cases in out.items()}


def bootstrap_interval(values: Sequence[float], *, confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                       seed: int = SEED) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of `values` (one value per case)."""
    if not values:
        raise ValueError("no values to bootstrap")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - confidence) / 2
    return means[int(tail * (resamples - 1))], means[round((1 - tail) * (resamples - 1))]


def pass_hat(passed: int, trials: int, k: int) -> float:
    """tau-bench's pass^k for one case: C(passed, k) / C(trials, k)."""
    if k > trials:
        raise ValueError(f"pass^{k} needs at least {k} trials, this case has {trials}")
    return math.comb(passed, k) / math.comb(trials, k)


def mean_pass_hat(outcomes: Iterable[Sequence[bool]], k: int) -> float:
    """pass^k averaged over cases, each given as the outcomes of its trials."""
    return statistics.fmean(pass_hat(sum(v), len(v), k) for v in outcomes)


def pass_hat_curve(cases: dict[tuple, list[bool]]) -> dict[int, float]:
    """k -> mean over cases of pass^k, for k = 1 ... the fewest trials any case has."""
    trials = min(len(v) for v in cases.values())
    return {k: mean_pass_hat(cases.values(), k) for k in range(1, trials + 1)}


def flip_rate(cases: dict[tuple, list[bool]]) -> float | None:
    """The share of cases with two or more trials whose outcomes differ; None when no case has two."""
    repeated = [v for v in cases.values() if len(v) > 1]
    return sum(len(set(v)) > 1 for v in repeated) / len(repeated) if repeated else None


def model_floor(cases: dict[tuple, list[bool]], **bootstrap: float) -> dict:
    # in case order, not the order trials finished in: the seeded resampling then gives one interval per run
    rates = [sum(v) / len(v) for _, v in sorted(cases.items(), key=lambda item: repr(item[0]))]
    low, high = bootstrap_interval(rates, **bootstrap)
    return {"cases": len(rates), "trials": min(len(v) for v in cases.values()), "pass@1": statistics.fmean(rates),
            "interval": (low, high), "pass^k": pass_hat_curve(cases), "flip_rate": flip_rate(cases)}


def compare(a: dict[tuple, list[bool]], b: dict[tuple, list[bool]], **bootstrap: float) -> dict | None:
    """A's pass@1 minus B's on their shared cases, with a paired bootstrap interval; None: no shared case."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    differences = [sum(a[c]) / len(a[c]) - sum(b[c]) / len(b[c]) for c in shared]
    low, high = bootstrap_interval(differences, **bootstrap)
    return {"cases": len(shared), "difference": statistics.fmean(differences), "interval": (low, high),
            "inside_noise": low <= 0 <= high, "bound_at_zero": 0 in (low, high) and low != high}


def summary(records: Iterable[dict]) -> dict:
    """The noise floor of every model in `records`, and every pair of models compared."""
    by_model = outcomes_by_case(records)
    return {"confidence": CONFIDENCE, "resamples": RESAMPLES,
            "models": {m: model_floor(cases) for m, cases in by_model.items()},
            "pairs": [{"a": a, "b": b, **found} for a, b in combinations(by_model, 2)
                      if (found := compare(by_model[a], by_model[b])) is not None]}


def markdown(records: Iterable[dict]) -> list[str]:
    """The report's "Noise floor" section, as Markdown lines."""
    data = summary(records)
    if not data["models"]:
        return []
    lines = ["## Noise floor", "",
             f"pass@1 with a {data['confidence']:.0%} bootstrap interval over cases ({data['resamples']} "
             "resamples, seeded); pass^k for k = 1 ... trials; flip rate: cases whose trials disagree.", "",
             "| model | cases × trials | pass@1 | 95 % interval | pass^k, k = 1 … | flip rate |",
             "|---|---:|---:|---|---|---:|"]
    for name, m in data["models"].items():
        low, high = m["interval"]
        curve = " · ".join(f"{v:.1%}" for v in m["pass^k"].values())
        flips = "—" if m["flip_rate"] is None else f"{m['flip_rate']:.1%}"
        lines.append(f"| {name} | {m['cases']} × {m['trials']} | {m['pass@1']:.1%} | {low:.1%} … {high:.1%} | "
                     f"{curve} | {flips} |")
    for pair in data["pairs"]:
        low, high = pair["interval"]
        verdict = _verdict(pair)
        lines += ["", f"{pair['a']} − {pair['b']}: {pair['difference'] * 100:+.1f} points on {pair['cases']} shared "
                      f"cases (95 % interval {low * 100:+.1f} … {high * 100:+.1f}): {verdict}."]
    return lines + [""]


def _verdict(pair: dict) -> str:
    """What a paired interval says. One that ends exactly at zero is not "inside" in the usual sense: the
    resamples lean one way and reach no difference at their edge, never the other way."""
    low, high = pair["interval"]
    if pair.get("bound_at_zero"):
        better, worse = (pair["a"], pair["b"]) if high > 0 else (pair["b"], pair["a"])
        return (f"the interval ends at exactly zero: the resamples lean towards {better}, but at their "
                f"{(1 - CONFIDENCE) / 2:.1%} edge show no difference, so these runs do not show {better} ahead "
                f"(nor {worse}); more cases would tell")
    if pair["inside_noise"]:
        return "inside the noise: these runs do not tell the two apart"
    return "outside the noise"
