"""agentkit.core.policies: every error policy, Retry's delays and validation, Limits, LimitHit, approval, and
the sanitised error text a model reads."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.core.policies import (
    REPORT,
    Approve,
    Deny,
    Edit,
    ErrorPolicy,
    LimitHit,
    Limits,
    Retry,
    normalize_approval,
    resolve_error_policy,
    sanitize_error_text,
)
from agentkit.core.types import ToolCall

CAPS = ["max_steps", "max_tool_calls", "max_thread_tool_calls", "max_repeats", "max_invalid_calls"]
CALL = ToolCall("call_1", "charge_card", '{"amount": 5}', {"amount": 5})


# -- resolve_error_policy ---------------------------------------------------------------------------------

def test_report_policy_reports_every_exception_with_the_default_envelope():
    p = resolve_error_policy("report")
    assert p.decide(RuntimeError("x"), CALL) == REPORT
    assert p.decide(KeyError("x"), CALL) == REPORT
    assert p.retry is None and p.raise_argument_errors is False


def test_raise_policy_raises_for_tool_errors_and_argument_errors():
    p = resolve_error_policy("raise")
    assert p.decide(RuntimeError("x"), CALL) is None
    assert p.raise_argument_errors is True


def test_any_other_text_is_what_the_model_sees():
    p = resolve_error_policy("The tool failed; try another city.")
    assert p.decide(RuntimeError("x"), CALL) == "The tool failed; try another city."
    assert p.raise_argument_errors is False


def test_an_exception_class_reports_only_that_class_and_its_subclasses():
    p = resolve_error_policy(LookupError)
    assert p.decide(KeyError("k"), CALL) == REPORT
    assert p.decide(ValueError("v"), CALL) is None


def test_a_tuple_of_classes_reports_any_of_them():
    p = resolve_error_policy((ValueError, TimeoutError))
    assert p.decide(ValueError(), CALL) == REPORT
    assert p.decide(TimeoutError(), CALL) == REPORT
    assert p.decide(RuntimeError(), CALL) is None


def test_a_function_chooses_the_text_or_none_to_raise():
    seen = []

    def policy(exc, call):
        seen.append((exc, call))
        return None if isinstance(exc, PermissionError) else f"{call.name} failed: {exc}"

    p = resolve_error_policy(policy)
    err = ValueError("bad amount")
    assert p.decide(err, CALL) == "charge_card failed: bad amount"
    assert p.decide(PermissionError(), CALL) is None
    assert seen[0] == (err, CALL)


def test_a_function_returning_something_else_than_text_is_a_type_error_when_deciding():
    p = resolve_error_policy(lambda exc, call: 42)  # accepted up front: it is callable
    with pytest.raises(TypeError, match="returned int; return a str for the model, or None to raise"):
        p.decide(ValueError(), CALL)


def test_an_already_resolved_policy_is_returned_as_is():
    p = resolve_error_policy("report")
    assert resolve_error_policy(p) is p


@pytest.mark.parametrize("on_failure, exc, expected, raises_arg_errors", [
    ("report", RuntimeError(), REPORT, False),
    ("raise", RuntimeError(), None, True),
    ("Gave up after retrying.", RuntimeError(), "Gave up after retrying.", False),
    (ValueError, ValueError(), REPORT, False),
    (ValueError, RuntimeError(), None, False),
    ((ValueError, KeyError), KeyError(), REPORT, False),
    (lambda exc, call: f"retried {call.id}", RuntimeError(), "retried call_1", False),
])
def test_retry_resolves_its_on_failure_like_any_policy(on_failure, exc, expected, raises_arg_errors):
    retry = Retry(max_retries=1, on_failure=on_failure)
    p = resolve_error_policy(retry)
    assert p.retry is retry and p.source is retry
    assert p.decide(exc, CALL) == expected
    assert p.raise_argument_errors is raises_arg_errors


@pytest.mark.parametrize("bad", [42, [], (), (ValueError, "x"), ValueError("an instance"), 3.5, {"a": 1}])
def test_a_value_that_is_no_policy_is_a_clear_type_error(bad):
    with pytest.raises(TypeError, match=r"on_tool_error=.* is not a policy: use 'report', 'raise'"):
        resolve_error_policy(bad)


def test_retry_with_a_bad_on_failure_is_refused_when_resolved():
    with pytest.raises(TypeError, match="is not a policy"):
        resolve_error_policy(Retry(on_failure=42))


@pytest.mark.parametrize("cls", [int, dict])
def test_a_class_that_is_not_an_exception_is_refused_up_front(cls):
    with pytest.raises(TypeError, match="is not a policy"):
        resolve_error_policy(cls)


def test_error_policy_repr_does_not_show_the_decision_function():
    assert "decide" not in repr(resolve_error_policy("report"))
    assert isinstance(resolve_error_policy("report"), ErrorPolicy)


# -- Retry: validation ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"max_retries": -1}, r"Retry\(max_retries=-1\): use a whole number, 0 or more"),
    ({"backoff": -0.1}, "backoff, multiplier and max_delay must be >= 0"),
    ({"max_delay": -1.0}, "backoff, multiplier and max_delay must be >= 0"),
    ({"jitter": 1.5}, r"jitter in \[0, 1\]"),
    ({"jitter": -0.1}, r"jitter in \[0, 1\]"),
    ({"on_failure": Retry()}, "add the retries together"),
])
def test_retry_refuses_values_that_make_no_sense(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Retry(**kwargs)


@pytest.mark.parametrize("kwargs", [{"max_retries": 0}, {"backoff": 0.0, "max_delay": 0.0},
                                    {"jitter": 0.0}, {"jitter": 1.0}])
def test_retry_accepts_the_edges_of_its_ranges(kwargs):
    Retry(**kwargs)


def test_retry_refuses_a_negative_multiplier():
    with pytest.raises(ValueError, match="multiplier"):
        Retry(multiplier=-1.0)


def test_retry_refuses_a_max_retries_that_is_not_a_whole_number():
    with pytest.raises((TypeError, ValueError), match="max_retries"):
        Retry(max_retries=1.5)


# -- Retry: delays -------------------------------------------------------------------------------------------

def test_delays_without_jitter_back_off_exponentially_up_to_the_cap():
    r = Retry(max_retries=6, backoff=0.5, multiplier=2.0, max_delay=4.0, jitter=0.0)
    assert list(r.delays(random.Random(0))) == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_zero_retries_means_no_delays():
    assert list(Retry(max_retries=0).delays(random.Random(0))) == []


@settings(deadline=None)
@given(max_retries=st.integers(0, 12), backoff=st.floats(0, 10), multiplier=st.floats(0, 5),
       max_delay=st.floats(0, 100), jitter=st.floats(0, 1), seed=st.integers(0, 2**32))
def test_delays_count_cap_jitter_and_determinism(max_retries, backoff, multiplier, max_delay, jitter, seed):
    r = Retry(max_retries=max_retries, backoff=backoff, multiplier=multiplier, max_delay=max_delay,
              jitter=jitter)
    delays = list(r.delays(random.Random(seed)))
    assert len(delays) == max_retries
    assert delays == list(r.delays(random.Random(seed)))  # same seed, same delays
    for i, d in enumerate(delays):
        capped = min(backoff * multiplier ** i, max_delay)  # the cap comes before the jitter
        assert capped * (1 - jitter) - 1e-9 <= d <= capped * (1 + jitter) + 1e-9
        assert d >= 0


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32))
def test_without_jitter_no_delay_exceeds_max_delay(seed):
    r = Retry(max_retries=10, backoff=1.0, multiplier=3.0, max_delay=5.0, jitter=0.0)
    assert max(r.delays(random.Random(seed))) == 5.0


def test_jitter_actually_varies_the_delays():
    r = Retry(max_retries=20, backoff=1.0, multiplier=1.0, jitter=0.5)
    assert len(set(r.delays(random.Random(1)))) > 1


# -- Retry: applies_to --------------------------------------------------------------------------------------

def test_only_idempotent_tools_are_retried_by_default():
    r = Retry()
    assert r.applies_to(RuntimeError(), idempotent=True) is True
    assert r.applies_to(RuntimeError(), idempotent=False) is False


def test_only_idempotent_false_retries_any_tool():
    assert Retry(only_idempotent=False).applies_to(RuntimeError(), idempotent=False) is True


def test_retry_on_limits_which_exceptions_are_retried():
    r = Retry(retry_on=(TimeoutError, ConnectionError))
    assert r.applies_to(TimeoutError(), idempotent=True)
    assert r.applies_to(ConnectionResetError(), idempotent=True)  # a subclass
    assert not r.applies_to(ValueError(), idempotent=True)
    anyone = Retry(retry_on=(TimeoutError,), only_idempotent=False)
    assert not anyone.applies_to(ValueError(), idempotent=False)


# -- Limits --------------------------------------------------------------------------------------------------

def test_default_limits_cap_a_run_at_twenty_model_calls_and_end():
    lim = Limits()
    assert lim.max_steps == 20 and lim.exit_behavior == "end"
    assert (lim.max_tool_calls, lim.max_thread_tool_calls, lim.max_calls_per_tool, lim.max_repeats,
            lim.max_invalid_calls) == (None, None, None, None, None)


@pytest.mark.parametrize("field", CAPS)
@pytest.mark.parametrize("bad", [-1, True, False, 2.0, "3"])
def test_limits_refuse_values_that_are_not_whole_numbers_naming_the_field(field, bad):
    with pytest.raises(ValueError, match=rf"Limits\.{field}={bad!r}: use a whole number >= 0, or None"):
        Limits(**{field: bad})


@pytest.mark.parametrize("field", CAPS)
def test_limits_accept_zero_and_none(field):
    assert getattr(Limits(**{field: 0}), field) == 0
    assert getattr(Limits(**{field: None}), field) is None


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2", None])
def test_max_calls_per_tool_caps_must_be_whole_numbers_naming_the_tool(bad):
    with pytest.raises(ValueError, match=rf"Limits\.max_calls_per_tool\['search'\]={bad!r}: use a whole number >= 0"):
        Limits(max_calls_per_tool={"search": bad})


def test_max_calls_per_tool_accepts_zero():
    assert Limits(max_calls_per_tool={"search": 0, "book": 3}).max_calls_per_tool == {"search": 0, "book": 3}


@pytest.mark.parametrize("bad", [["search"], "search"])
def test_max_calls_per_tool_that_is_not_a_mapping_is_refused_naming_the_field(bad):
    with pytest.raises((TypeError, ValueError), match="max_calls_per_tool"):
        Limits(max_calls_per_tool=bad)


@pytest.mark.parametrize("bad", ["stop", "END", "", None])
def test_exit_behavior_must_be_one_of_three_words(bad):
    with pytest.raises(ValueError, match=r"Limits\.exit_behavior=.*use 'continue', 'end' or 'error'"):
        Limits(exit_behavior=bad)


@pytest.mark.parametrize("behavior", ["continue", "end", "error"])
def test_exit_behavior_accepts_its_three_words(behavior):
    assert Limits(exit_behavior=behavior).exit_behavior == behavior


# -- LimitHit ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("limit, count, maximum, message", [
    ("max_tool_calls", 4, 3, "Tool call limit reached: run limit exceeded (4/3 calls)."),
    ("max_thread_tool_calls", 6, 5, "Tool call limit reached: thread limit exceeded (6/5 calls)."),
    ("max_repeats", 3, 2, "Tool call limit reached: repeat limit exceeded (3/2 calls)."),
    ("max_calls_per_tool:search", 2, 1, "Tool call limit reached: limit for search exceeded (2/1 calls)."),
    ("max_steps", 20, 20, "Step limit reached: step limit exceeded (20/20 model calls)."),
])
def test_limit_hit_message_names_the_limit_and_the_counts(limit, count, maximum, message):
    assert LimitHit(limit, count, maximum).message() == message


@pytest.mark.parametrize("limit, reason", [
    ("max_tool_calls", "tool_limit"), ("max_thread_tool_calls", "tool_limit"),
    ("max_calls_per_tool:search", "tool_limit"),
    ("max_repeats", "repeated_call"), ("max_steps", "max_steps"),
])
def test_limit_hit_maps_to_its_stop_reason(limit, reason):
    assert LimitHit(limit, 1, 0).stop_reason == reason


def test_too_many_invalid_calls_maps_to_schema_fail():
    assert LimitHit("max_invalid_calls", 3, 2).stop_reason == "schema_fail"


# -- approval ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("answer, expected", [
    (None, Approve()),
    (True, Approve()),
    (False, Deny()),
    ("not on a Sunday", Deny("not on a Sunday")),
    (Approve(), Approve()),
    (Deny("no"), Deny("no")),
    (Edit({"amount": 1}), Edit({"amount": 1})),
])
def test_normalize_approval_accepts_every_documented_answer(answer, expected):
    assert normalize_approval(answer) == expected


def test_a_plain_false_denies_with_the_default_reason():
    assert normalize_approval(False).reason == "denied by the user"


@pytest.mark.parametrize("bad", [1, 0, {"amount": 1}, ["x"], Approve])
def test_any_other_approval_answer_is_a_clear_type_error(bad):
    with pytest.raises(TypeError, match="approval hook returned .*; return True/False, a denial reason"):
        normalize_approval(bad)


# -- sanitising the error text a model reads ----------------------------------------------------------

@pytest.mark.parametrize("text, gone, kept", [
    ("could not connect to db-7.prod.internal:5432", ["db-7", "5432"], ["could not connect to <host>"]),
    ("query failed: SELECT * FROM users WHERE id = 7", ["users", "SELECT"], ["query failed: <sql>"]),
    ("GET https://api.example.com/v1/x?token=abc failed: 503", ["example", "token"], ["<url>", "503"]),
    ("cannot open /var/lib/app/secrets.yaml", ["secrets"], ["cannot open <path>"]),
    ("cannot open C:\\Users\\bob\\key.txt", ["bob"], ["<path>"]),
    ("peer 10.0.3.7:8080 and fe80::1ff:fe23:4567:890a reset", ["10.0.3.7", "fe80"], ["<ip>"]),
    ("mail ops@example.com", ["ops@"], ["<email>"]),
    ("redis:6379 refused", ["redis"], ["<host> refused"]),
    ("upstream 503 at 12:30:45", [], ["upstream 503 at 12:30:45"]),
])
def test_sanitize_removes_infrastructure_details(text, gone, kept):
    out = sanitize_error_text(text)
    for word in gone:
        assert word not in out
    for word in kept:
        assert word in out


def test_sanitize_drops_stack_traces_and_keeps_the_exception_line():
    text = ('Traceback (most recent call last):\n  File "/srv/app/db.py", line 12, in query\n'
            '    cur.execute(sql)\npsycopg.OperationalError: server at "10.0.3.7" refused')
    assert sanitize_error_text(text) == 'psycopg.OperationalError: server at "<ip>" refused'


def test_sanitize_keeps_text_short():
    assert len(sanitize_error_text("x" * 5000)) == 300
    assert len(sanitize_error_text("x" * 5000, max_length=50)) == 50


# -- what a model is told about a failure -----------------------------------------------------------------

def test_a_tool_failure_keeps_its_own_kind_words_path_and_keyword():
    from agentkit import ToolFailure
    from agentkit.core.policies import failure_result
    from agentkit.core.types import ToolCall

    call = ToolCall("c1", "find_invoice", {"id": "INV-9"})
    result = failure_result(call, ToolFailure("not_found", "no invoice INV-9 at db.internal", "$.id"), attempts=2)
    assert result.error == {"kind": "not_found", "message": "no invoice INV-9 at db.internal (after 2 attempts)",
                            "path": "$.id", "keyword": None}
    plain = failure_result(call, RuntimeError("no invoice INV-9 at db.internal"))
    assert plain.error["kind"] == "tool_error" and "db.internal" not in plain.error["message"]  # sanitised


def test_the_loop_sends_a_tool_failure_as_its_envelope():
    import agentkit
    from agentkit import ScriptedModel, ToolFailure, call, tool

    @tool
    def find_invoice(id: str) -> dict:
        """Find an invoice by id."""
        raise ToolFailure("not_found", f"no invoice {id}", "$.id")

    model = ScriptedModel([[call("find_invoice", {"id": "INV-9"})], "There is no such invoice."])
    run = agentkit.run(model, "INV-9?", tools=[find_invoice])
    (result,) = run.results
    assert result.error == {"kind": "not_found", "message": "no invoice INV-9", "path": "$.id", "keyword": None}


# -- a near miss of a mode name is refused, not read as the model's fixed text ----------------------------

MODES = ("report", "raise")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@st.composite
def near_misses(draw):
    """A mode name with one slip: a typo (insert, delete, swap, replace a letter), a capital, or a space."""
    mode = draw(st.sampled_from(MODES))
    i = draw(st.integers(0, len(mode) - 1))
    slip = draw(st.sampled_from(["insert", "delete", "swap", "replace", "case", "space"]))
    letter = draw(st.sampled_from(_LETTERS))
    if slip == "insert":
        text = mode[:i] + letter + mode[i:]
    elif slip == "delete":
        text = mode[:i] + mode[i + 1:]
    elif slip == "swap" and i < len(mode) - 1:
        text = mode[:i] + mode[i + 1] + mode[i] + mode[i + 2:]
    elif slip == "replace":
        text = mode[:i] + letter + mode[i + 1:]
    elif slip == "case":
        text = mode[:i] + mode[i].upper() + mode[i + 1:]
    else:
        text = draw(st.sampled_from([" ", "\n", "\t"])) + mode + draw(st.sampled_from(["", " ", "\n"]))
    return mode, text


@pytest.mark.parametrize("text, mode", [("rasie", "raise"), ("Report", "report"), ("raise ", "raise"),
                                        ("RAISE", "raise"), (" report", "report"), ("reprot", "report")])
def test_the_issues_near_misses_are_refused_with_the_mode_they_miss(text, mode):
    with pytest.raises(ValueError, match=rf"did you mean '{mode}'\?"):
        resolve_error_policy(text)
    with pytest.raises(ValueError, match=rf"did you mean '{mode}'\?"):  # Retry's on_failure takes the same values
        resolve_error_policy(Retry(on_failure=text))


@given(near_misses())
def test_any_one_slip_from_a_mode_name_is_refused_naming_that_mode(miss):
    mode, text = miss
    if text == mode:  # a swap of two equal letters changes nothing
        return
    with pytest.raises(ValueError, match=rf"did you mean '{mode}'\?"):
        resolve_error_policy(text)


_WORDS = st.text(_LETTERS + _LETTERS.upper() + ".,!'", min_size=1, max_size=12)


@given(st.lists(_WORDS, min_size=2, max_size=8))
def test_a_sentence_is_still_the_text_the_model_reads(words):
    text = " ".join(words)
    assert resolve_error_policy(text).decide(RuntimeError("x"), CALL) == text


@pytest.mark.parametrize("text", ["Failed.", "error", "retry", "Tool failed, please try another.", "raise it",
                                  "Please report this to the user."])
def test_words_that_are_no_near_miss_stay_fixed_texts(text):
    assert resolve_error_policy(text).decide(RuntimeError("x"), CALL) == text
