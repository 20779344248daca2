"""One attempt's request, what the recipe's build makes: everything send reads, and what an error names.

    request = AttemptRequest("gpt-4.1-mini", "https://api.openai.com/v1/chat/completions",
                             "/v1/chat/completions", headers, body, stream=False, clock=AttemptClock(60.0))
    join_url("https://h/v1beta?key=x", "models/m:streamGenerateContent?alt=sse")
        -> "https://h/v1beta/models/m:streamGenerateContent?alt=sse&key=x"

It is frozen, so no part that reads it (send, classify, decode, the call's retry state) can change what
another part sees; the one thing learned while sending, the size of the encoded body, is added to `sent`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .deadlines import AttemptClock

__all__ = ["AttemptRequest", "join_url"]


@dataclass(frozen=True)
class AttemptRequest:
    """Everything needed to send one attempt, and to name it in an error."""

    model: str
    url: str
    path: str  # URL path + query, for the record (never holds a key)
    headers: dict
    body: dict
    stream: bool
    clock: AttemptClock
    history: tuple = ()  # (model, outcome) of the call's earlier attempts
    wait: float = 0.0  # slept before this attempt
    started: float = field(default_factory=time.perf_counter)  # when it was built
    messages: tuple = ()  # the whole conversation, kept only to remember stored responses
    continued: str | None = None  # the stored response this attempt continues from
    sent: list = field(default_factory=list)  # the body's size in bytes, once httpx has encoded it


def join_url(base_url: str, path: str) -> str:
    """base_url + the codec's path, keeping a query of either (`...?key=x` + `m:stream?alt=sse`)."""
    base, _, base_query = base_url.partition("?")
    url = f"{base.rstrip('/')}/{path.lstrip('/')}"
    if base_query:
        url += ("&" if "?" in url else "?") + base_query
    return url
