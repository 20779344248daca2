"""The report: pass@1 and pass^k, labels, per-case figures, cost, merging shards, Markdown/JSON/charts."""

from __future__ import annotations

import json
import math

import matplotlib
import pytest

matplotlib.use("Agg")

from agentkit.bench.report import Price, Report, pass_hat, percentile  # noqa: E402


def record(model, case, trial, ok, label=None, category="simple_python", suite="bfcl", **extra):
    return {"v": 1, "model": model, "provider": "openai-chat", "mode": "native tool calling", "suite": suite,
            "category": category, "case": case, "trial": trial, "seed": trial, "ok": ok,
            "label": None if ok else (label or "wrong_value"), "detail": "", "steps": 2, "tool_calls": 1,
            "latency_ms": 10.0 * (trial + 1), "input_tokens": 1000, "output_tokens": 100, **extra}


# model a: case 1 passes 3/3, case 2 passes 2/3, case 3 passes 0/3 (one category);
# model b: 1 trial, 1 of 2 cases in another category.
RECORDS = ([record("a", "c1", t, True) for t in range(3)]
           + [record("a", "c2", t, t != 1, "type_error") for t in range(3)]
           + [record("a", "c3", t, False, "missing_argument") for t in range(3)]
           + [record("b", "x1", 0, True, category="limits", suite="agentkit"),
              record("b", "x2", 0, False, "limit_ignored", category="limits", suite="agentkit")])


def test_pass_at_1_and_pass_hat_k_follow_their_definitions():
    a = Report(RECORDS).summary()["models"]["a"]
    assert a["trials"] == 3
    assert a["overall"]["pass@1"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert a["overall"]["pass^2"] == pytest.approx((1 + 1 / 3 + 0) / 3)  # C(2,2)/C(3,2) for c2
    assert a["overall"]["pass^3"] == pytest.approx(1 / 3)
    assert pass_hat(2, 3, 2) == pytest.approx(1 / 3) and pass_hat(3, 3, 3) == 1.0
    with pytest.raises(ValueError, match="needs at least 4 trials"):
        pass_hat(1, 3, 4)


def test_labels_and_per_case_figures():
    a = Report(RECORDS).summary()["models"]["a"]
    assert a["labels"] == {"missing_argument": 3, "type_error": 1}
    assert a["steps_per_case"] == 2 and a["tool_calls_per_case"] == 1
    assert a["latency_ms"] == {"p50": 20.0, "p95": pytest.approx(30.0)}
    assert a["input_tokens"] == 9000 and a["cost_usd"] is None
    assert percentile([1, 2, 3, 4], 50) == 2.5 and percentile([], 50) is None


def test_cost_comes_from_prices_per_million_tokens():
    report = Report(RECORDS, prices={"a": Price(input=2.0, output=8.0)})
    models = report.summary()["models"]
    assert models["a"]["cost_usd"] == pytest.approx((9000 * 2 + 900 * 8) / 1e6)
    assert models["b"]["cost_usd"] is None
    assert "cost, all trials (USD)" in report.to_markdown()


def test_several_models_side_by_side_in_markdown_and_json():
    report = Report(RECORDS)
    text = report.to_markdown()
    assert "| suite | category | cases | a | b |" in text
    assert "| bfcl | simple_python | 3 | 55.6 % (33.3 %) | — |" in text
    assert "| agentkit | limits | 2 | — | 50.0 % |" in text
    assert "Mode: native tool calling" in text
    assert "| limit_ignored | kept calling after a tool said stop" in text
    data = json.loads(report.to_json())
    assert set(data["models"]) == {"a", "b"} and data["mode"] == "native tool calling"
    assert "latency" not in report.to_markdown(latency=False)


def test_models_that_scored_different_cases_say_how_many_each_figure_covers():
    """The oracle scored 5 cases, the other model 2 of them (3 lost to provider errors): the row says
    5 / 2 and each figure is over its own cases, instead of one count that fits neither."""
    records = ([record("oracle", f"c{i}", 0, True) for i in range(5)]
               + [record("small", f"c{i}", 0, i == 0, None if i == 0 else "wrong_value") for i in range(2)]
               + [record("small", f"c{i}", 0, False, "provider_error") for i in range(2, 5)])
    text = Report(records).to_markdown()
    assert "| bfcl | simple_python | 5 / 2 | 100.0 % of 5 | 50.0 % of 2 |" in text
    assert "| **all** | | 5 / 2 | 100.0 % of 5 | 50.0 % of 2 |" in text
    assert "each figure says how many cases it is over" in text
    even = Report([record("a", "c1", 0, True), record("b", "c1", 0, False, "wrong_value")]).to_markdown()
    assert "| bfcl | simple_python | 1 | 100.0 % | 0.0 % |" in even and "each figure says" not in even


def test_shards_merge_and_a_later_line_for_the_same_trial_wins(tmp_path):
    first, second = tmp_path / "m.shard-1-of-2.jsonl", tmp_path / "m.shard-2-of-2.jsonl"
    first.write_text("\n".join(json.dumps(r) for r in RECORDS[:5]) + "\n")
    retried = record("a", "c3", 2, True)  # the resumed run got this trial right after a provider error
    second.write_text("\n".join(json.dumps(r) for r in RECORDS[5:] + [retried]) + "\n")
    report = Report.load(tmp_path, check_cases=False)  # made-up case ids
    a = report.summary()["models"]["a"]
    assert a["records"] == 9 and a["labels"]["missing_argument"] == 2
    with pytest.raises(FileNotFoundError):
        Report.load(tmp_path / "nothing")


def test_a_replayed_run_says_so():
    assert "Replayed from a recording" in Report([record("a", "c", 0, True, replayed=True)]).to_markdown()


def test_charts_show_what_they_were_given(tmp_path):
    report = Report(RECORDS)
    (ax,) = report.accuracy_chart().axes
    widths = sorted(round(p.get_width(), 1) for p in ax.patches)
    assert widths == [0.0, 0.0, 50.0, 55.6]  # a and b, each in two categories (0 where a model has none)
    (ax,) = report.labels_chart().axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["missing_argument", "limit_ignored", "type_error"]
    (ax,) = report.latency_chart().axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    (ax,) = report.pass_hat_chart().axes
    assert [round(y) for y in ax.lines[0].get_ydata()] == [56, math.floor(100 * (1 + 1 / 3) / 3), 33]
    saved = report.save_charts(tmp_path)
    assert [p.name for p in saved] == ["accuracy.png", "labels.png", "latency.png"] and all(p.stat().st_size
                                                                                            for p in saved)
