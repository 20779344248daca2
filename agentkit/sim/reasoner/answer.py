"""Step 5, compose the answer, in the user's language: every result that came back, every ask that
failed for good, or small talk when no tool fits."""

from __future__ import annotations

import json
from typing import Any, Iterable

from .lexicon import GREETINGS, PHRASES, THANKS
from .vocabulary import Observation, PlannedCall, Situation, TriedCall
from .facts import lower_aligned, mentions
from .plan import Progress, key_of


def compose_answer(s: Situation, progress: list[Progress], strays: list[TriedCall],
                   tools_off: bool = False) -> str:
    """Quote every result that came back; explain every ask that failed for good."""
    say = PHRASES[s.language]
    lines = [f"- {a.call.name}: {render(a.observation.value)}" for a in _successes(s.tried)]
    failures = [p.tried[-1] for p in progress if not p.done and p.errors]
    if not lines and not failures:
        failures = [a for a in strays if not a.observation.ok][-1:]
    header = say["found"] if lines else say["sorry"]
    lines += ["- " + say["failed"].format(name=a.call.name or "tool", why=_why(a.observation)) for a in failures]
    if lines:
        return "\n".join([header, *lines])
    return reply_without_tools(s, [p.intent for p in progress], tools_off)


def _successes(tried: Iterable[TriedCall]) -> list[TriedCall]:
    seen, out = set(), []
    for a in tried:
        key = (a.call.name, key_of(a.observation.value))
        if a.observation.ok and key not in seen:
            seen.add(key)
            out.append(a)
    return out


def _why(observation: Observation) -> str:
    message = _shorten(observation.message.strip() or observation.kind, 200)
    return f"{message} ({observation.kind})" if observation.kind not in ("", "error") else message


def reply_without_tools(s: Situation, intents: list[PlannedCall], tools_off: bool) -> str:
    """Small talk gets small talk; a request no tool fits gets an honest "I can't look that up"."""
    say, low = PHRASES[s.language], lower_aligned(s.text)
    if tools_off and intents:
        return say["tools_off"].format(names=", ".join(dict.fromkeys(i.name for i in intents)))
    if not s.text.strip():
        return say["empty"]
    if mentions(low, THANKS):
        return say["thanks"]
    if mentions(low, GREETINGS):
        return say["greeting"]
    return say["no_tool"]


def render(value: Any, limit: int = 300) -> str:
    """A result value as text: strings as they are, anything else as compact JSON."""
    text = value.strip() if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return _shorten(text, limit)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
