"""The loop stays a lesson: `agentkit/core/loop.py` is read in one sitting, no function in it is longer
than a screen, and why a run stops is one ordered table of small named checks.

Counted from the source with `ast` (a function's lines are end_lineno - lineno + 1, its docstring included).
"""

from __future__ import annotations

import ast
from pathlib import Path

from agentkit.core.loop import LoopCore

ROOT = Path(__file__).resolve().parents[1]
LOOP = ROOT / "agentkit" / "core" / "loop.py"
RESUME = ROOT / "agentkit" / "long_running" / "resume.py"
MAX_LINES = 700
MAX_FUNCTION_LINES = 40


def functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def enclosing_function(tree: ast.AST, node: ast.AST) -> str | None:
    """The name of the innermost function around `node`, or None at the top level of a class or module."""
    inside = [f for f in functions(tree) if f.lineno <= node.lineno <= f.end_lineno]
    return max(inside, key=lambda f: f.lineno).name if inside else None


def test_loop_py_is_read_in_one_sitting():
    lines = len(LOOP.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"agentkit/core/loop.py has {lines} lines, more than {MAX_LINES}"


def test_no_function_or_method_in_loop_py_is_longer_than_a_screen():
    tree = ast.parse(LOOP.read_text(encoding="utf-8"))
    long = {f.name: f.end_lineno - f.lineno + 1 for f in functions(tree)
            if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES}
    assert not long, f"over {MAX_FUNCTION_LINES} lines in agentkit/core/loop.py: {long}"


def test_why_a_run_stops_is_one_ordered_table_of_named_checks():
    """The precedence is the table's order: a reordering is a change of behaviour, and shows here."""
    names = [check.__name__ for check in LoopCore.STOP_CHECKS]
    assert names == ["failed", "model_answered", "limit_reached", "step_cap", "thread_step_cap", "time_budget",
                     "cancelled", "too_many_invalid_calls", "budget_wind_down", "all_return_direct"]
    for check in LoopCore.STOP_CHECKS:
        assert getattr(LoopCore, check.__name__) is check and check.__doc__, check.__name__


def test_the_step_cap_is_read_in_one_place():
    tree = ast.parse(LOOP.read_text(encoding="utf-8"))
    readers = [enclosing_function(tree, node) for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and node.attr == "max_steps"]
    assert readers == ["step_cap"]


def test_continue_is_read_only_where_a_tool_call_cap_refuses():
    """For a budget the loop says "wrap_up" (Limits.budget_behavior): "continue" is a tool-call cap's word."""
    tree = ast.parse(LOOP.read_text(encoding="utf-8"))
    readers = {enclosing_function(tree, node) for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and node.value == "continue"}
    assert readers == {"_admit", "_admit_batch"}


def test_resume_goes_on_through_the_cores_own_methods():
    """resume.py sets no attribute (of the core, its run or a thread) and calls no setattr: LoopCore.restore does."""
    tree = ast.parse(RESUME.read_text(encoding="utf-8"))
    targets = [t for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
    assert not [ast.unparse(t) for t in targets if isinstance(t, ast.Attribute)]
    calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert "setattr" not in calls and "core.restore" in calls
    private = [alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names
               if alias.name.startswith("_")]
    assert not private
