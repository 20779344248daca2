"""The report: results files in, accuracy by category, failure labels, cost and speed out.

    report = Report.load("bench-results/")                 # every *.jsonl there (shards merge)
    print(report.to_markdown())                              # one model or several side by side
    report.to_json()                                         # the same numbers for scripts
    report.accuracy_chart(); report.labels_chart(); report.latency_chart()   # matplotlib Figures

Per model: how many cases and trials, pass@1 and pass^k per category and overall, how many failed
trials carry each label, steps and tool calls per case, latency p50/p95, tokens per case, and the
cost when you give prices (USD per million input and output tokens).

pass@1 is the chance that one trial of a case passes (averaged over cases); pass^k the chance that
all k trials of a case pass, estimated as in tau-bench: C(c, k) / C(n, k) for a case that passed c of
n trials. A model that is right 90 % of the time has pass@1 = 0.9 but pass^3 near 0.73: what a user
who asks three times sees.

Merging: files from several shards (or several models) are read together; when the same (model,
case, trial) appears twice, the later line wins (a resumed run that retried a failed model call).
Files whose run lines give one label two different configurations are refused (`ResultsError`).

Reading (`results.read_results`): a damaged line is skipped and named in `warnings` (file and line
number), as is a record of a case the suite no longer has: a report never counts a case the suite did
not run. When the models compared ran different case sets, the report says so.

Provider errors are not the model's mistakes: accuracy is over the *scored* trials, and the trials lost
to failed model calls (timeouts, dropped connections, after HTTPModel's retries) are counted apart.

Left out on purpose: statistical tests between models, and BFCL's own weighted overall score (the
per-category numbers are BFCL's; how to weigh them is the reader's choice).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..viz import PALETTE, finish, pyplot
from .noise import markdown as noise_floor  # pass@1's interval, pass^k, flip rate, model vs model
from .noise import mean_pass_hat, pass_hat  # noqa: F401 — pass_hat is also this module's, for the notebooks
from .results import ResultsError, differences, known_cases, merged_config, read_results, scrub_keys
from .runner import MODE, record_key
from .scoring import LABELS, RULES

NOT_SCORED = "provider_error"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


def result_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Files, and every *.jsonl inside folders, in a stable order."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.glob("*.jsonl"))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"no results at {p}")
    return files


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


class Report:
    """Numbers for one or several models from benchmark records (see the module docstring)."""

    def __init__(self, records: Iterable[dict], prices: Price | Mapping[str, Price] | None = None,
                 warnings: Iterable[str] = ()):
        latest: dict[tuple, dict] = {}
        for record in records:
            latest[record_key(record)] = record
        self.records = scrub_keys(list(latest.values()))  # a file written before records were scrubbed
        self.prices = prices
        self.models = list(dict.fromkeys(r["model"] for r in self.records))  # in the order they were given
        self.warnings = list(warnings)  # lines skipped while loading, each with its file and line number

    @classmethod
    def load(cls, *paths: str | os.PathLike, prices: Price | Mapping[str, Price] | None = None,
             check_cases: bool = True) -> Report:
        """Every results file of `paths`; with `check_cases`, records of cases the suites no longer hold
        are skipped with a warning (BFCL's are checked once it is fetched)."""
        records: list[dict] = []
        warnings: list[str] = []
        configs: dict[str, tuple[Path, dict]] = {}
        current: dict[tuple[str, str], dict[str, set[str]] | None] = {}
        for path in result_files(paths):
            results = read_results(path, missing_ok=False)
            warnings += results.warnings
            config = merged_config(results.runs)
            for label in {r["model"] for r in results.records} if config is not None else ():
                if label in configs and (found := differences(configs[label][1], config)):
                    raise ResultsError(f"{configs[label][0]} and {path} both hold {label!r} but from different "
                                       f"run configurations ({'; '.join(found)}): report them one at a time")
                configs.setdefault(label, (path, config))
            for record, line in zip(results.records, results.lines):
                where = (record["suite"], record["category"])
                if check_cases and where not in current:
                    current[where] = known_cases(*where)
                known = current.get(where)
                if known is not None and record["case"] not in known:
                    warnings.append(f"{path} line {line}: case {record['case']!r} is not in "
                                    f"{record['suite']}:{record['category']} (any more); skipped")
                    continue
                if known is not None and record.get("case_version", "") not in known[record["case"]] | {""}:
                    warnings.append(f"{path} line {line}: case {record['case']!r} has changed since it was run; "
                                    "skipped")
                    continue
                records.append(record)
        return cls(records, prices, warnings)

    def _price(self, model: str) -> Price | None:
        if isinstance(self.prices, Price):
            return self.prices
        if isinstance(self.prices, Mapping):
            return self.prices.get(model)
        return None

    # -- the numbers ------------------------------------------------------------------------------------

    def categories(self) -> list[tuple[str, str]]:
        """(suite, category) pairs in the suites' own order, whatever order the records came in."""
        from .suites import SUITES

        order = {(s, c): i for i, (s, c) in enumerate((s, c) for s, cs in SUITES.items() for c in cs)}
        found = {(r["suite"], r["category"]) for r in self.records}
        return sorted(found, key=lambda sc: (order.get(sc, len(order)), sc))

    def labels(self) -> list[str]:
        """Every failure label of the model's own (provider errors are not), the most frequent first."""
        return list(_most_frequent_first(Counter(r["label"] for r in self.records
                                                 if not r["ok"] and r["label"] != NOT_SCORED)))

    def summary(self) -> dict:
        """Everything the report shows, as plain JSON-able data."""
        return {"mode": MODE, "replayed": any(r.get("replayed") for r in self.records),
                "models": {m: self._model_summary(m) for m in self.models},
                "case_sets": self.case_sets(), "warnings": self.warnings}

    def case_sets(self) -> dict:
        """Whether the models ran the same cases: {"same": bool, "shared": n, "only": {model: n not shared}}."""
        ran = {m: {(r["suite"], r["category"], r["case"]) for r in self.records if r["model"] == m}
               for m in self.models}
        shared = set.intersection(*ran.values()) if ran else set()
        return {"same": all(cases == shared for cases in ran.values()), "shared": len(shared),
                "only": {m: len(cases - shared) for m, cases in ran.items()}}

    def _model_summary(self, model: str) -> dict:
        mine = [r for r in self.records if r["model"] == model]
        scored = [r for r in mine if r["label"] != NOT_SCORED]
        by_case: dict[tuple, list[dict]] = defaultdict(list)
        for r in scored:
            by_case[(r["suite"], r["category"], r["case"])].append(r)
        k = min((len(v) for v in by_case.values()), default=1)
        all_cases = {(r["suite"], r["category"], r["case"]) for r in mine}

        def accuracy(groups: list[list[dict]]) -> dict:
            if not groups:
                return {"cases": 0}
            out = {"cases": len(groups), "pass@1": statistics.fmean(
                sum(r["ok"] for r in g) / len(g) for g in groups)}
            for j in range(2, k + 1):
                out[f"pass^{j}"] = mean_pass_hat(([r["ok"] for r in g] for g in groups), j)
            return out

        categories = {}
        for suite, category in self.categories():
            groups = [g for (s, c, _), g in by_case.items() if (s, c) == (suite, category)]
            if groups:
                categories[f"{suite}:{category}"] = accuracy(groups)
        failed = _most_frequent_first(Counter(r["label"] for r in scored if not r["ok"]))
        latencies = [r["latency_ms"] for r in mine if r.get("latency_ms") is not None]
        tokens_in = sum(r.get("input_tokens", 0) for r in mine)
        tokens_out = sum(r.get("output_tokens", 0) for r in mine)
        price = self._price(model)
        return {
            "provider": next((r.get("provider") for r in mine if r.get("provider")), None),
            "trials": k, "records": len(mine),
            "overall": accuracy(list(by_case.values())),
            "categories": categories,
            "labels": failed,
            "steps_per_case": statistics.fmean(r.get("steps", 0) for r in mine),
            "tool_calls_per_case": statistics.fmean(r.get("tool_calls", 0) for r in mine),
            "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
            "input_tokens_per_case": tokens_in / len(mine), "output_tokens_per_case": tokens_out / len(mine),
            "input_tokens": tokens_in, "output_tokens": tokens_out,
            "cost_usd": price.cost(tokens_in, tokens_out) if price else None,
            "provider_errors": len(mine) - len(scored),  # trials not scored: the model call failed
            "scored_trials": len(scored), "cases_not_scored": len(all_cases) - len(by_case),
        }

    # -- text -----------------------------------------------------------------------------------------------

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.summary(), indent=indent, ensure_ascii=False)

    def to_markdown(self, latency: bool = True) -> str:
        """The report as Markdown. latency=False leaves out wall-clock figures (for stored notebook output)."""
        data = self.summary()
        models = data["models"]
        names = list(models)
        k = max((m["trials"] for m in models.values()), default=1)
        lines = ["# Benchmark report", "",
                 f"Mode: {MODE} (tools in each provider's own tools field, calls read from its tool-call "
                 f"fields; no prompt-based function calling)."]
        if data["replayed"]:
            lines.append("Replayed from a recording: scores are the recorded run's, latencies are not real.")
        rules = sorted({r["rules"] for r in self.records if r.get("rules")})
        if rules:  # BFCL cases: whose verdicts (scoring.RULES)
            lines.append("BFCL scoring: " + "; ".join(RULES.get(r, r) for r in rules) + ".")
        lines += ["", "Models: " + "; ".join(f"{n} ({m['provider'] or '?'}, {m['trials']} trial"
                                             f"{'s' if m['trials'] > 1 else ''})" for n, m in models.items()), ""]
        sets = data["case_sets"]
        if not sets["same"]:
            only = ", ".join(f"{n} ran {c} case{'s' if c != 1 else ''} the others did not"
                             for n, c in sets["only"].items() if c)
            lines += [f"**The models ran different case sets**: {only}; {sets['shared']} cases are shared. "
                      "Compare them on the same cases (the same --suite, --limit and --shard).", ""]
        lost = {n: m["provider_errors"] for n, m in models.items() if m["provider_errors"]}
        if lost:
            lines += ["Accuracy is over the scored trials only. Not scored (the model call failed after its "
                      "retries: timeouts, dropped connections, server errors): "
                      + ", ".join(f"{n} {c} trial{'s' if c != 1 else ''}" for n, c in lost.items())
                      + ". Run the same command again to retry them.", ""]
        if self.warnings:
            lines += [f"{len(self.warnings)} line{'s' if len(self.warnings) != 1 else ''} of the results files "
                      "skipped (damaged, or a case the suite no longer has): see the warnings.", ""]

        head = "pass@1" + (f", pass^{k}" if k > 1 else "")
        lines += [f"## Accuracy by category ({head})", "",
                  "| suite | category | cases | " + " | ".join(names) + " |",
                  "|---|---|---:|" + "---:|" * len(names)]
        uneven = False
        rows = [(suite, category, [models[n]["categories"].get(f"{suite}:{category}") for n in names])
                for suite, category in self.categories()]
        rows.append(("**all**", "", [models[n]["overall"] for n in names]))
        for suite, category, accuracies in rows:
            counts, ran = _case_counts(accuracies)
            uneven = uneven or ran
            cells = [_cell(a, k) + (f" of {a['cases']}" if ran and a and a.get("cases") else "") for a in accuracies]
            lines.append(f"| {suite} | {category + ' ' if category else ''}| {counts} | " + " | ".join(cells) + " |")
        if uneven:
            lines += ["", "Where the models scored different numbers of cases, `cases` lists each model's, in "
                      "column order, and each figure says how many cases it is over (a case whose trials "
                      "were none of them scored is left out of its count)."]

        labels = self.labels()
        lines += ["", "## Failure labels (failed trials)", ""]
        if labels:
            lines += ["| label | meaning | " + " | ".join(names) + " |", "|---|---|" + "---:|" * len(names)]
            for label in labels:
                lines.append(f"| {label} | {LABELS.get(label, '')} | "
                             + " | ".join(str(models[n]["labels"].get(label, 0)) for n in names) + " |")
        else:
            lines.append("No failures.")

        lines += ["", "## Per case", "", "| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        rows = [("steps (model calls)", lambda m: f"{m['steps_per_case']:.2f}"),
                ("tool calls", lambda m: f"{m['tool_calls_per_case']:.2f}"),
                ("input tokens", lambda m: f"{m['input_tokens_per_case']:,.0f}"),
                ("output tokens", lambda m: f"{m['output_tokens_per_case']:,.0f}")]
        if latency:
            rows += [("latency p50", lambda m: _ms(m["latency_ms"]["p50"])),
                     ("latency p95", lambda m: _ms(m["latency_ms"]["p95"]))]
        if any(m["cost_usd"] is not None for m in models.values()):
            rows.append(("cost, all trials (USD)",
                         lambda m: "—" if m["cost_usd"] is None else f"{m['cost_usd']:.4f}"))
        rows.append(("failed model calls", lambda m: str(m["provider_errors"])))  # not scored: see the note above
        for title, show in rows:
            lines.append(f"| {title} | " + " | ".join(show(models[n]) for n in names) + " |")
        lines += [""] + noise_floor([r for r in self.records if r["label"] != NOT_SCORED])  # scored trials only
        from .matrix import markdown as format_fault_matrix  # only records of a --formats/--faults run

        lines += format_fault_matrix(self.records)
        return "\n".join(lines).rstrip("\n") + "\n"

    def to_csv(self) -> str:
        """One row per model and category (and an "all" row per model): cases, pass@1, pass^k, not scored."""
        data = self.summary()["models"]
        k = max((m["trials"] for m in data.values()), default=1)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["model", "suite", "category", "cases", "pass@1", *(f"pass^{j}" for j in range(2, k + 1)),
                         "not_scored_trials"])
        for name, m in data.items():
            rows = [(*key.split(":", 1), acc) for key, acc in m["categories"].items()]
            rows.append(("all", "", m["overall"]))
            for suite, category, acc in rows:
                lost = sum(1 for r in self.records if r["model"] == name and r["label"] == NOT_SCORED
                           and (suite == "all" or (r["suite"], r["category"]) == (suite, category)))
                writer.writerow([name, suite, category, acc.get("cases", 0), _num(acc.get("pass@1")),
                                 *(_num(acc.get(f"pass^{j}")) for j in range(2, k + 1)), lost])
        return out.getvalue()

    def _repr_markdown_(self) -> str:  # Jupyter shows the report as a table
        return self.to_markdown(latency=False)

    # -- charts (matplotlib is imported here, on first use) -----------------------------------------------------

    def accuracy_chart(self, title: str = "Accuracy by category (pass@1)") -> Any:
        """Horizontal bars: one group per category, one bar per model."""
        data = self.summary()["models"]
        keys = [f"{s}:{c}" for s, c in self.categories()]
        fig, ax = _grouped_bars(keys, {name: [100 * m["categories"].get(key, {}).get("pass@1", 0) for key in keys]
                                       for name, m in data.items()}, row_height=0.32)
        ax.set_xlim(0, 100)
        ax.set_xlabel("% of trials passed")
        ax.set_title(title)
        return finish(fig)

    def labels_chart(self, title: str = "Why trials failed") -> Any:
        """Horizontal bars: failed trials per label, one bar per model."""
        data = self.summary()["models"]
        labels = self.labels() or ["(none)"]
        fig, ax = _grouped_bars(labels, {name: [m["labels"].get(label, 0) for label in labels]
                                         for name, m in data.items()}, row_height=0.3)
        ax.set_xlabel("failed trials")
        ax.set_title(title)
        return finish(fig)

    def latency_chart(self, title: str = "Latency per case") -> Any:
        """One box per model: the spread of whole-case wall times (all model calls and tools of a case)."""
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 0.5 * len(self.models) + 1.5))
        samples = [[r["latency_ms"] for r in self.records if r["model"] == m and r.get("latency_ms") is not None]
                   for m in self.models]
        import matplotlib

        sideways = ({"orientation": "horizontal"} if tuple(map(int, matplotlib.__version__.split(".")[:2])) >= (3, 10)
                    else {"vert": False})  # the keyword changed in matplotlib 3.10
        ax.boxplot(samples, showfliers=False, whis=(5, 95), **sideways)
        ax.set_yticks(range(1, len(self.models) + 1), self.models)
        ax.set_xlabel("ms per case (whiskers: p5 and p95)")
        ax.set_title(title)
        return finish(fig)

    def pass_hat_chart(self, title: str = "pass^k: every one of k trials passes") -> Any:
        """pass^k against k for each model (pass^1 = pass@1): how fast reliability falls with repeats."""
        plt = pyplot()
        data = self.summary()["models"]
        fig, ax = plt.subplots(figsize=(6, 3.2))
        for i, (name, m) in enumerate(data.items()):
            ks = list(range(1, m["trials"] + 1))
            values = [100 * m["overall"]["pass@1" if j == 1 else f"pass^{j}"] for j in ks]
            ax.plot(ks, values, marker="o", label=name, color=PALETTE[i % len(PALETTE)])
        ax.set_xlabel("k (trials that must all pass)")
        ax.set_ylabel("% of cases")
        ax.set_ylim(0, 100)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_title(title)
        ax.legend(fontsize=8)
        return finish(fig)

    def save_charts(self, folder: str | os.PathLike) -> list[Path]:
        """accuracy.png, labels.png and latency.png in `folder` (and formats_faults.png for a matrix run)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        saved = []
        charts = [("accuracy", self.accuracy_chart()), ("labels", self.labels_chart()),
                  ("latency", self.latency_chart())]
        if any("fault" in r for r in self.records):  # a --formats/--faults run: its two heat maps too
            from .matrix import chart as format_fault_chart

            charts.append(("formats_faults", format_fault_chart(self.records)))
        for name, fig in charts:
            path = folder / f"{name}.png"
            fig.savefig(path, dpi=120)
            saved.append(path)
        return saved


def _most_frequent_first(counts: Counter) -> dict[str, int]:
    """label -> count, the most frequent first (ties by name, so the order is stable)."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _case_counts(accuracies: list[dict | None]) -> tuple[str, bool]:
    """The `cases` column of a row: one number when every model that ran the category scored as many
    cases, else each model's ("22 / 50"), and whether they differ."""
    ran = [a.get("cases", 0) for a in accuracies if a is not None]  # a model without the category: no count
    if len(set(ran)) <= 1:
        return str(ran[0] if ran else 0), False
    return " / ".join(str(a.get("cases", 0)) if a is not None else "—" for a in accuracies), True


def _cell(accuracy: dict | None, k: int) -> str:
    if not accuracy or not accuracy.get("cases"):
        return "—"
    text = f"{100 * accuracy['pass@1']:.1f} %"
    if k > 1 and f"pass^{k}" in accuracy:
        text += f" ({100 * accuracy[f'pass^{k}']:.1f} %)"
    return text


def _grouped_bars(keys: list[str], series: Mapping[str, list[float]], row_height: float) -> tuple[Any, Any]:
    """Horizontal bars, one group per key (top to bottom), one coloured bar per series in each group."""
    fig, ax = pyplot().subplots(figsize=(7, row_height * len(keys) * max(1, len(series)) + 1.2))
    height = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        ax.barh([j + i * height for j in range(len(keys))], values, height=height, label=name,
                color=PALETTE[i % len(PALETTE)])
    ax.set_yticks([j + height * (len(series) - 1) / 2 for j in range(len(keys))], keys)
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    return fig, ax


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} ms"
