"""A tool that asks its caller for input in the middle of a call, and the caller's answer.

Server side, inside an agentkit tool served by `ToolServer`:

    from agentkit.mcp import ask_user

    @tool
    def transfer(amount: int) -> dict:
        answer = ask_user(f"Send {amount} EUR?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        ...                                                    # answer == {"ok": True}

Client side, `connect(server, on_input=decide)`: `decide(request)` gets an `InputRequest` (what is asked,
the schema of the answer, the tool when known) and answers in the same shape as the loop's approval hook:
a dict (accept, with these values), True / None / `Approve()` (accept, nothing to fill in), `Edit(values)`
(accept with `values`), False / a reason / `Deny(reason)` (decline).

On the wire this is the 2026-07-28 revision's multi round-trip request (its changelog, item 7: "Servers
return an `InputRequiredResult` (`resultType: "input_required"`) whose `inputRequests` field carries the
requests for the additional information needed ... Clients respond with `inputResponses` on a retry of the
original request"). The server keeps nothing between the two requests: the tool runs again from the start
on the retry, and each `ask_user` finds its answer under the key of its turn (`ask-1`, `ask-2`, ...). On
2025-11-25 the same question is a server-to-client `elicitation/create` request inside the call. Either
way a server may ask only a client that declared the `elicitation` capability (the specification's
multi round-trip page: "Servers MUST NOT send an inputRequests that the client has not declared support
for"); a client without `on_input` declares none, and the tool's `ask_user` then fails the call with kind
"input_unavailable".

Left out on purpose: URL-mode elicitation, sampling and roots requests (Sampling and Roots are deprecated
in 2026-07-28, its changelog's "Deprecated" 1), and pausing a run while it waits (a run pauses only
before its calls start; `on_input` answers while the call is in flight).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ToolFailure
from ..core.policies import Approve, Deny, Edit, Pause


@dataclass(frozen=True)
class InputRequest:
    """What a server asks its caller for: `message` (for a person), `schema` (of the answer), `tool`
    (the tool being called, when the client knows it), `key` (the server's name for this question)."""

    message: str
    schema: dict = field(default_factory=lambda: {"type": "object", "properties": {}})
    tool: str | None = None
    key: str | None = None


class InputNeeded(Exception):
    """Raised inside a served tool by `ask_user` when the request carries no answer yet: the server turns it
    into the question (an InputRequiredResult, or an elicitation request on 2025-11-25)."""

    def __init__(self, requests: dict[str, InputRequest]):
        super().__init__(", ".join(f"{key}: {r.message}" for key, r in requests.items()))
        self.requests = requests


@dataclass
class _Answers:
    """The answers a request carries (key -> (action, content)), whether the client may be asked, and how
    many questions the tool has asked so far in this run of it."""

    given: dict[str, tuple[str, dict | None]]
    can_ask: bool
    asked: int = 0


_CURRENT: contextvars.ContextVar[_Answers | None] = contextvars.ContextVar("agentkit_mcp_answers", default=None)


def ask_user(message: str, schema: dict | None = None) -> dict:
    """Ask the MCP client's user for input; the answer's values (a dict matching `schema`).

    Only inside a tool that a `ToolServer` is running. A declined answer, or a client that cannot be asked,
    fails the call (ToolFailure kind "input_declined" / "input_unavailable"): the model reads why.
    """
    answers = _CURRENT.get()
    if answers is None:
        raise RuntimeError("ask_user() works only inside a tool served by agentkit.mcp.ToolServer")
    answers.asked += 1
    key = f"ask-{answers.asked}"
    if key in answers.given:
        action, content = answers.given[key]
        if action != "accept":  # "decline" or "cancel"
            said = {"decline": "declined", "cancel": "cancelled"}.get(action, f"answered {action!r} to")
            raise ToolFailure("input_declined", f"the user {said} the request: {message}")
        return dict(content or {})
    if not answers.can_ask:
        raise ToolFailure("input_unavailable", f"this tool needs input from the user ({message}), and the MCP "
                                               f"client declared no elicitation capability to ask for it")
    raise InputNeeded({key: InputRequest(message, schema or {"type": "object", "properties": {}}, key=key)})


def answering(given: dict[str, tuple[str, dict | None]], can_ask: bool) -> contextvars.Token:
    """Server side: the answers of this request, for the `ask_user` calls of the tool about to run."""
    return _CURRENT.set(_Answers(dict(given), can_ask))


def done_answering(token: contextvars.Token) -> None:
    _CURRENT.reset(token)


def normalize_answer(answer: Any) -> tuple[str, dict | None]:
    """Client side: what `on_input` returned, as MCP's (action, content): ("accept", {...}) or ("decline", None)."""
    if isinstance(answer, dict):
        return "accept", answer
    if answer is None or answer is True or isinstance(answer, Approve):
        return "accept", {}
    if isinstance(answer, Edit):
        return "accept", dict(answer.arguments)
    if answer is False or isinstance(answer, (str, Deny)):
        return "decline", None
    if isinstance(answer, Pause):
        raise TypeError("on_input cannot pause: the call is in flight; answer, or decline with False")
    raise TypeError(f"on_input returned {answer!r}; return the values (a dict), True/False, a reason to decline, "
                    "Approve(), Edit(values) or Deny(reason)")
