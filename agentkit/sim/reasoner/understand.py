"""Step 1, understand: the latest user request, its language, and the calls tried since, with results.

    s = understand(request)      # Situation(text="東京の天気は？", language="ja", tried=(...), ...)
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Iterable

from ...core.types import Message, ToolCall, ToolSpec
from ...providers.common import json_or_none
from ..wire.common import ChatRequest
from .lexicon import READ_LIMIT
from .vocabulary import Observation, Situation, TriedCall


def understand(request: ChatRequest) -> Situation:
    """Read the latest user request and what happened after it (calls, results, turns)."""
    messages = list(request.messages)
    last = _last_user_index(messages)
    text = within_reach(normalise(messages[last].content or "")) if last >= 0 else ""
    before = _last_user_index(messages[:last]) if last > 0 else -1
    after = messages[last + 1:]
    return Situation(text=text, language=detect_language(text), tools=usable_tools(request.tools),
                     options=request.options, tried=tuple(pair_results(after)),
                     turns=sum(1 for m in after if m.role == "assistant"),
                     earlier=within_reach(normalise(messages[before].content or "")) if before >= 0 else "")


def normalise(text: str) -> str:
    """NFKC folds full-width digits and punctuation ("１ドル？" → "1ドル?") so one rule fits all."""
    return unicodedata.normalize("NFKC", text)


def within_reach(text: str) -> str:
    """What the reasoner reads of a long request: its first and last READ_LIMIT / 2 characters, the part
    in between skipped (a question usually opens or closes a pasted document); the two ends are separate
    asks. Everything later costs time in proportion to this, never to the whole prompt."""
    if len(text) <= READ_LIMIT:
        return text
    half = READ_LIMIT // 2
    return text[:half] + "\n;\n" + text[-half:]


def detect_language(text: str) -> str:
    """Kana means Japanese; Han characters without kana mean Chinese; anything else, English."""
    if re.search(r"[\u3040-\u30ff]", text):
        return "ja"
    if re.search(r"[\u4e00-\u9fff]", text):
        return "zh"
    return "en"


def _last_user_index(messages: list[Message]) -> int:
    """The latest user message with text (Anthropic-style result turns are user turns without text)."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].content
        if messages[i].role == "user" and isinstance(content, str) and content.strip():
            return i
    return -1


def usable_tools(tools: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    """The tools a model can call: named, and the first of each name (a real API rejects duplicates)."""
    seen: dict[str, ToolSpec] = {}
    for tool in tools:
        if isinstance(tool.name, str) and tool.name and tool.name not in seen:
            seen[tool.name] = tool
    return tuple(seen.values())


def pair_results(messages: Iterable[Message]) -> list[TriedCall]:
    """Pair each tool message with the call it answers: by id, else by name, else by position."""
    open_calls: list[ToolCall] = []
    tried: list[TriedCall] = []
    for m in messages:
        if m.role == "assistant":
            open_calls = list(m.tool_calls)
        elif m.role == "tool":
            call = _take_call(open_calls, m) or ToolCall(m.tool_call_id or "", m.name or "", {}, {})
            tried.append(TriedCall(call, read_result(m)))
    return tried


def _take_call(open_calls: list[ToolCall], m: Message) -> ToolCall | None:
    for test in (lambda c: m.tool_call_id and c.id == m.tool_call_id, lambda c: m.name and c.name == m.name,
                 lambda c: True):
        for i, call in enumerate(open_calls):
            if test(call):
                return open_calls.pop(i)
    return None


def read_result(m: Message) -> Observation:
    """Read a tool message: the kit's envelope, Gemini's {"output"/"error"}, or plain text."""
    text = m.content or ""
    data = json_or_none(text)
    if isinstance(data, dict) and isinstance(data.get("ok"), bool):
        if data["ok"] and not m.is_error:
            return Observation(True, data.get("result"))
        return _error_observation(data.get("error"), text)
    if isinstance(data, dict) and len(data) == 1 and ("output" in data or "error" in data):
        if "error" in data or m.is_error:
            return _error_observation(data.get("error", data.get("output")), text)
        return Observation(True, data["output"])
    if m.is_error or re.match(r"\s*(?:error\b|エラー|错误)", text, re.IGNORECASE):
        return _error_observation(text, text)
    return Observation(True, text if data is None else data)


def _error_observation(error: Any, text: str) -> Observation:
    if isinstance(error, dict):
        return Observation(False, kind=str(error.get("kind") or error.get("type") or "error"),
                       message=str(error.get("message") or ""), path=_str_or_none(error.get("path")),
                       keyword=_str_or_none(error.get("keyword")))
    return Observation(False, kind="error", message=str(error if error not in (None, "") else text))


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
