"""Tutorial 11's experiments: the figures its tables and charts show."""

from __future__ import annotations

from agentkit.experiments import long_running as L
from agentkit.http import HTTPModel


def test_every_budget_stops_the_never_ending_model_with_its_own_reason():
    rows = {name: rest for name, *rest in L.budget_stops()}
    assert set(rows) == set(L.BUDGETS)
    assert rows["input tokens ≤ 5,000"][:3] == ["token_budget", 5, 4]  # 5 × 1,200 = 6,000 > 5,000
    assert rows["reasoning tokens ≤ 50"][:2] == ["token_budget", 3]  # 3 × 20 = 60 > 50
    assert rows["cost ≤ $0.005"][:2] == ["cost_budget", 3] and rows["cost ≤ $0.005"][-1] == 0.00504
    assert rows["time ≤ 10 s"][:3] == ["time_budget", 4, 4]  # 4 tools × 3 s = 12 s > 10 s, before call 5


def test_continue_gives_one_more_call_without_tools():
    rows = {name: rest for name, *rest in L.budget_stops("continue")}
    assert rows["input tokens ≤ 5,000"][:3] == ["token_budget", 6, 4]
    assert rows["time ≤ 10 s"][:3] == ["time_budget", 5, 4]  # the time ran out between calls: one more, no tools
    run = L.budget_run("output tokens ≤ 200", "continue")
    assert run.output == "Here is what I found so far."


def test_the_budgets_mean_the_same_paused_at_every_call():
    """Money spent before a pause counts; a day waiting paused does not count against the time budget."""
    assert L.budgets_across_pauses() == [("cost ≤ $0.005", "cost_budget after 3 calls", "cost_budget after 3 calls"),
                                         ("time ≤ 10 s", "time_budget after 4 calls", "time_budget after 4 calls")]


def test_compaction_keeps_a_conversations_requests_flat_and_tool_definitions_are_counted(server):
    model = HTTPModel("sim-reasoner", "openai-chat", base_url=server.base_url("openai-chat"), api_key="k")
    series = L.tokens_per_call(model, L.strategies(keep=2), questions=L.QUESTIONS[:6])
    none, drop, elide = series["no compaction"], series["drop oldest"], series["elide old results"]
    assert len(none) == 12 and none == sorted(none) and none[-1] > elide[-1] > drop[-1]
    assert max(drop[4:]) - min(drop[4::2]) < 400  # from the third question on: the newest earlier turn and this one
    assert drop[:4] == none[:4]  # nothing to drop before that
    assert L.tool_definition_tokens(model) > 0
    assert L.explore(model, strategy="drop oldest") is not None
