"""Reading server-sent event streams (tutorial 02): the events of a streamed response, and how its raw
text is framed."""

from __future__ import annotations

import json
from typing import Any


def sse_events(response: Any) -> list[tuple[str | None, Any]]:
    """A streamed httpx response as [(event name, data)], the data parsed when it is JSON.

    httpx-sse does the framing: comment lines (`: keep-alive`) are not events, and an event without an
    `event:` line gets the name None (SSE calls it "message"). Data that is not JSON stays text, e.g.
    OpenAI's closing `[DONE]`.
    """
    from httpx_sse import EventSource

    events: list[tuple[str | None, Any]] = []
    for sse in EventSource(response).iter_sse():
        try:
            data = json.loads(sse.data)
        except ValueError:
            data = sse.data
        events.append((None if sse.event == "message" else sse.event, data))
    return events


def sse_framing(text: str) -> str:
    """How a stream's raw text is framed, in a few words:

        "event: + data: lines · no [DONE]"
        "data: lines only · 1 comment line · ends with data: [DONE]"

    Comment lines (starting with ':') are keep-alives, not events: httpx-sse and `sse_events` skip them.
    """
    blocks = [b for b in text.replace("\r\n", "\n").split("\n\n") if b.strip()]
    lines = [line for b in blocks for line in b.splitlines()]
    words = ["event: + data: lines" if any(line.startswith("event:") for line in lines) else "data: lines only"]
    comments = sum(line.startswith(":") for line in lines)
    if comments:
        words.append(f"{comments} comment line{'s' if comments > 1 else ''}")
    words.append("ends with data: [DONE]" if blocks and blocks[-1].strip() == "data: [DONE]" else "no [DONE]")
    return " · ".join(words)
