"""sim-reasoner: the simulator's default model — plain rules that decide the way a small model does.

A real model turns a conversation plus a list of tools into either tool calls or text. This module does
the same with rules you can read top to bottom, in five steps:

    1. understand  the latest user request, its language, and the tool results that came back since
    2. choose      split the request into asks; match each ask against tool names, descriptions, params
    3. fill        pull argument values out of the ask that fit each parameter's JSON Schema
    4. plan        this turn's batch: new calls, a corrected call after an error, or nothing
    5. answer      the final text, built from the results, in the user's language

    >>> from agentkit.providers.common import ChatRequest
    >>> from agentkit.types import Message, ToolSpec
    >>> weather = ToolSpec("get_weather", "Current weather for a city",
    ...                    {"type": "object", "properties": {"city": {"type": "string"}}})
    >>> decide(ChatRequest("sim-reasoner", (Message.user("Weather in Paris?"),), (weather,))).calls
    (PlannedCall(name='get_weather', arguments={'city': 'Paris'}, raw=None),)

Everything is derived from the request itself (the model keeps no memory between requests), so the same
request always gets the same decision. `Decision.notes` records why, for learners.

What it can read: concepts in English, Japanese and Chinese (天気/weather, 為替/rate, 請求書/invoice…),
enum values and their synonyms ("支払済み" → paid), numbers with units ("5秒" → seconds), dates and
months ("2026年1月" → 2026-01-01..2026-01-31), currencies and which side they are on ("1ドル何円" →
USD→JPY), cities from a small gazetteer, quoted strings, ids like INV-1042, values dictated as
`name=value`, and follow-ups ("And in Osaka?" repeats the earlier request's tool).

Left out on purpose: learning, randomness, the system prompt, plans where one tool's output feeds the
next call's arguments, and any real understanding of language. The word lists below are small on
purpose — extend them to teach the reasoner a new domain.
"""

from __future__ import annotations

import calendar
import json
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import date
from functools import lru_cache
from typing import Any, Callable, Iterable

from ..providers.common import ChatRequest
from ..types import Message, ModelOptions, ToolCall, ToolSpec

__all__ = ["decide", "decide_situation", "understand", "choose_tools", "fill_arguments", "read_facts",
           "plan_intents", "compose_answer", "fresh_call", "best_tool", "parameters", "tool_choice_of",
           "usable_tools", "score_tool", "noun_phrase",
           "Decision", "PlannedCall", "Situation", "Attempt", "Outcome", "Facts", "Param", "Ask",
           "CONCEPTS", "ENUM_SYNONYMS", "CURRENCIES", "CITIES", "PHRASES"]


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# 0. What the reasoner knows: every word list, in one place
# ════════════════════════════════════════════════════════════════════════════════════════════════════

#: A tool and an ask "mean the same thing" when both mention a form of the same concept.
CONCEPTS: dict[str, tuple[str, ...]] = {
    "weather": ("weather", "forecast", "temperature", "rain", "sunny", "天気", "気温", "天候", "予報",
                "天气", "气温", "下雨"),
    "currency": ("exchange", "currency", "currencies", "fx", "forex", "rate", "dollar", "yen", "euro",
                 "為替", "レート", "通貨", "ドル", "円", "ユーロ", "汇率", "货币", "美元", "日元", "欧元"),
    "search": ("search", "find", "look up", "lookup", "query", "検索", "探", "調べ", "搜索", "查找", "查询"),
    "invoice": ("invoice", "bill", "billing", "請求書", "請求", "インボイス", "发票", "账单"),
    "time": ("time", "clock", "timezone", "時刻", "時間", "何時", "時計", "时间", "几点"),
    "memory": ("remember", "memorize", "recall", "記憶", "覚え", "记住"),
    "wait": ("wait", "sleep", "pause", "delay", "待", "スリープ", "等待"),
    "math": ("calculate", "compute", "add", "plus", "sum", "total", "multiply", "+", "計算", "足し", "计算"),
    "order": ("order", "注文", "订单"),
    "email": ("email", "mail", "メール", "邮件"),
}

#: Other words for enum values, so "支払済み" (or "settled") can choose status="paid".
ENUM_SYNONYMS: dict[str, tuple[str, ...]] = {
    "paid": ("settled", "支払済", "支払い済", "入金済", "已支付", "已付款"),
    "sent": ("issued", "unpaid", "outstanding", "送付済", "送信済", "発行済", "未払", "已发送", "未付款"),
    "draft": ("下書き", "草稿", "草案"),
    "void": ("voided", "cancelled", "canceled", "無効", "取消", "作废"),
    "celsius": ("°c", "摂氏", "摄氏"),
    "fahrenheit": ("°f", "華氏", "华氏"),
    "asc": ("ascending", "oldest first", "昇順", "升序"),
    "desc": ("descending", "newest first", "降順", "降序"),
}

#: ISO 4217 codes and the words people use for them (longest forms win: "豪ドル" before "ドル").
CURRENCIES: dict[str, tuple[str, ...]] = {
    "USD": ("usd", "dollar", "dollars", "us dollar", "$", "ドル", "米ドル", "美元", "美金"),
    "JPY": ("jpy", "yen", "円", "日本円", "日元", "日圆", "¥"),
    "EUR": ("eur", "euro", "euros", "ユーロ", "欧元", "€"),
    "GBP": ("gbp", "pound", "pounds", "sterling", "ポンド", "英镑", "£"),
    "CNY": ("cny", "rmb", "yuan", "renminbi", "人民元", "人民币"),
    "KRW": ("krw", "won", "ウォン", "韓国ウォン", "韩元"),
    "CHF": ("chf", "swiss franc", "スイスフラン", "瑞士法郎"),
    "AUD": ("aud", "australian dollar", "豪ドル", "澳元"),
    "CAD": ("cad", "canadian dollar", "カナダドル", "加元"),
    "NGN": ("ngn", "naira", "ナイラ", "奈拉"),
}


@dataclass(frozen=True)
class City:
    """One gazetteer entry: the names a city goes by, and its IANA time zone."""

    en: str
    ja: str
    zh: str
    tz: str
    aliases: tuple[str, ...] = ()

    def names(self) -> tuple[str, ...]:
        return (self.en, self.ja, self.zh, *self.aliases)


CITIES: tuple[City, ...] = (
    # "東京都" is listed so that it wins over the "京都" (Kyoto) inside it: longer names match first
    City("Tokyo", "東京", "东京", "Asia/Tokyo", ("東京都",)),
    City("Osaka", "大阪", "大阪", "Asia/Tokyo"),
    City("Kyoto", "京都", "京都", "Asia/Tokyo"),
    City("Nagoya", "名古屋", "名古屋", "Asia/Tokyo"),
    City("Sapporo", "札幌", "札幌", "Asia/Tokyo"),
    City("Fukuoka", "福岡", "福冈", "Asia/Tokyo"),
    City("Paris", "パリ", "巴黎", "Europe/Paris"),
    City("London", "ロンドン", "伦敦", "Europe/London"),
    City("Berlin", "ベルリン", "柏林", "Europe/Berlin"),
    City("Lagos", "ラゴス", "拉各斯", "Africa/Lagos"),
    City("New York", "ニューヨーク", "纽约", "America/New_York", ("NYC",)),
    City("San Francisco", "サンフランシスコ", "旧金山", "America/Los_Angeles"),
    City("Beijing", "北京", "北京", "Asia/Shanghai"),
    City("Shanghai", "上海", "上海", "Asia/Shanghai"),
    City("Seoul", "ソウル", "首尔", "Asia/Seoul"),
    City("Singapore", "シンガポール", "新加坡", "Asia/Singapore"),
    City("Sydney", "シドニー", "悉尼", "Australia/Sydney"),
)

#: Words that carry no meaning for matching a request to a tool.
STOPWORDS = frozenset("""
a an the is are was be been what whats how many much in on at of for to from by with and or me my i you
your it its this that please tell give get set show can could would will do does some any all now current
today return returns given specified value string number use using about there which when who let know
also then just only like eg e.g example per into as than them they their our we us if be want need
""".split())

#: Words for how a parameter is meant (matched against its name, description, and the tool sentences
#: that mention it).
ROLE_WORDS: dict[str, tuple[str, ...]] = {
    "date": ("date", "dates", "day", "since", "until", "yyyy-mm-dd", "日付", "日期", "期間"),
    "currency": ("currency", "currencies", "iso 4217", "通貨", "货币", "币种"),
    "timezone": ("timezone", "time zone", "tz", "iana", "タイムゾーン", "时区"),
    "city": ("city", "cities", "location", "place", "town", "都市", "城市", "場所", "地点", "地名"),
}
START_WORDS = ("start", "from", "since", "begin", "after", "min", "開始", "开始")
END_WORDS = ("end", "to", "until", "before", "max", "終了", "结束")
BASE_WORDS = ("base", "from", "source", "sell", "基準")
QUOTE_WORDS = ("quote", "to", "target", "buy", "counter", "symbols", "symbol")
ID_WORDS = ("id", "ids", "number", "no", "code", "sku", "ref", "reference")
TEXT_WORDS = ("query", "q", "text", "keyword", "term", "search", "prompt", "message", "content", "title",
              "topic", "question", "input", "検索語", "キーワード", "关键词")

#: Units that tie a number to a parameter: "5秒" goes to `seconds`, "3 results" to `limit`.
UNIT_FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # family: (unit words after the number, parameter words)
    "second": (("second", "seconds", "sec", "secs", "s", "秒"),
               ("second", "seconds", "sec", "duration", "delay", "wait", "sleep", "秒")),
    "minute": (("minute", "minutes", "min", "mins", "分"), ("minute", "minutes", "分")),
    "day": (("day", "days", "日間", "天"), ("day", "days", "日数")),
    "count": (("result", "results", "item", "items", "件", "個", "个", "times", "回", "次"),
              ("limit", "count", "max", "top", "n", "num", "size", "k", "results", "件数")),
    "money": (tuple(a for aliases in CURRENCIES.values() for a in aliases),
              ("amount", "value", "sum", "price", "金額", "金额")),
}
SPELLED_NUMBERS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                   "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
MONTHS = {name: i for i, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
     ("november", "nov"), ("december", "dec")), start=1) for name in names}

GREETINGS = ("hello", "hi", "hey", "good morning", "good evening", "こんにちは", "こんばんは", "おはよう",
             "やあ", "你好", "您好", "嗨")
THANKS = ("thanks", "thank you", "ありがとう", "谢谢", "多谢")

#: Everything the reasoner says, per language.
PHRASES: dict[str, dict[str, str]] = {
    "en": {"found": "Here is what I found:", "sorry": "I could not complete the request:",
           "failed": "{name} failed: {why}",
           "greeting": "Hello! How can I help you today?", "thanks": "You're welcome!",
           "no_tool": "I don't have a tool for that, so I can't look it up.",
           "tools_off": "Tools are switched off for this turn, so I can't run {names}; "
                        "I can only answer from what I already know.",
           "empty": "How can I help?"},
    "ja": {"found": "調べた結果です。", "sorry": "依頼を完了できませんでした。",
           "failed": "{name} は失敗しました: {why}",
           "greeting": "こんにちは！何をお手伝いしましょうか？", "thanks": "どういたしまして！",
           "no_tool": "この依頼に使えるツールがないため、調べることができません。",
           "tools_off": "このターンはツールを使えないため、{names} を実行できません。"
                        "手元の知識だけでお答えします。",
           "empty": "何をお手伝いしましょうか？"},
    "zh": {"found": "查询结果如下：", "sorry": "无法完成请求：", "failed": "{name} 调用失败：{why}",
           "greeting": "你好！有什么可以帮你的吗？", "thanks": "不客气！",
           "no_tool": "没有适合这个请求的工具，所以无法查询。",
           "tools_off": "本轮不能使用工具，所以无法调用 {names}，只能根据已有知识回答。",
           "empty": "有什么可以帮你的吗？"},
}

MATCH_THRESHOLD = 2   # an ask needs at least this score to pick a tool (one shared concept scores 3)
MAX_ERRORS_PER_ASK = 2  # the second error for the same ask is explained, never retried again


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# The vocabulary of a decision
# ════════════════════════════════════════════════════════════════════════════════════════════════════

@dataclass(frozen=True)
class PlannedCall:
    """A call the model wants to make. `raw` is set only when it "writes" its arguments as (bad) text."""

    name: str
    arguments: dict | None
    raw: str | None = None


@dataclass(frozen=True)
class Decision:
    """What the model does this turn: call tools, or answer with text. `notes` say why."""

    text: str | None = None
    calls: tuple[PlannedCall, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """A tool result as the model reads it: a value, or an error with kind/message/path."""

    ok: bool
    value: Any = None
    kind: str = ""
    message: str = ""
    path: str | None = None
    keyword: str | None = None


@dataclass(frozen=True)
class Attempt:
    """One call made since the user's request, with its result (paired by call id, else by name)."""

    call: ToolCall
    outcome: Outcome


@dataclass(frozen=True)
class Situation:
    """Step 1's output: everything the later steps need, read from the request."""

    text: str                    # the latest user request, NFKC-normalised
    language: str                # "en", "ja" or "zh"
    tools: tuple[ToolSpec, ...]  # offered tools with usable names, first of each name
    options: ModelOptions
    attempts: tuple[Attempt, ...]  # calls made since the request, in order, with outcomes
    turns: int                   # assistant turns since the request
    earlier: str = ""            # the user's previous request, for follow-ups ("And in Osaka?")


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# 1. Understand the request
# ════════════════════════════════════════════════════════════════════════════════════════════════════

def understand(request: ChatRequest) -> Situation:
    """Read the latest user request and what happened after it (calls, results, turns)."""
    messages = list(request.messages)
    last = _last_user_index(messages)
    text = normalise(messages[last].content or "") if last >= 0 else ""
    before = _last_user_index(messages[:last]) if last > 0 else -1
    after = messages[last + 1:]
    return Situation(text=text, language=detect_language(text), tools=usable_tools(request.tools),
                     options=request.options, attempts=tuple(pair_results(after)),
                     turns=sum(1 for m in after if m.role == "assistant"),
                     earlier=normalise(messages[before].content or "") if before >= 0 else "")


def normalise(text: str) -> str:
    """NFKC folds full-width digits and punctuation ("１ドル？" → "1ドル?") so one rule fits all."""
    return unicodedata.normalize("NFKC", text)


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


def pair_results(messages: Iterable[Message]) -> list[Attempt]:
    """Pair each tool message with the call it answers: by id, else by name, else by position."""
    open_calls: list[ToolCall] = []
    attempts: list[Attempt] = []
    for m in messages:
        if m.role == "assistant":
            open_calls = list(m.tool_calls)
        elif m.role == "tool":
            call = _take_call(open_calls, m) or ToolCall(m.tool_call_id or "", m.name or "", {}, {})
            attempts.append(Attempt(call, read_result(m)))
    return attempts


def _take_call(open_calls: list[ToolCall], m: Message) -> ToolCall | None:
    for test in (lambda c: m.tool_call_id and c.id == m.tool_call_id, lambda c: m.name and c.name == m.name,
                 lambda c: True):
        for i, call in enumerate(open_calls):
            if test(call):
                return open_calls.pop(i)
    return None


def read_result(m: Message) -> Outcome:
    """Read a tool message: the kit's envelope, Gemini's {"output"/"error"}, or plain text."""
    text = m.content or ""
    data = _json_or_none(text)
    if isinstance(data, dict) and isinstance(data.get("ok"), bool):
        if data["ok"] and not m.is_error:
            return Outcome(True, data.get("result"))
        return _error_outcome(data.get("error"), text)
    if isinstance(data, dict) and len(data) == 1 and ("output" in data or "error" in data):
        if "error" in data or m.is_error:
            return _error_outcome(data.get("error", data.get("output")), text)
        return Outcome(True, data["output"])
    if m.is_error or re.match(r"\s*(?:error\b|エラー|错误)", text, re.IGNORECASE):
        return _error_outcome(text, text)
    return Outcome(True, text if data is None else data)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _error_outcome(error: Any, text: str) -> Outcome:
    if isinstance(error, dict):
        return Outcome(False, kind=str(error.get("kind") or error.get("type") or "error"),
                       message=str(error.get("message") or ""), path=_str_or_none(error.get("path")),
                       keyword=_str_or_none(error.get("keyword")))
    return Outcome(False, kind="error", message=str(error if error not in (None, "") else text))


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# Reading facts out of text: numbers, dates, currencies, cities, quoted strings, ids
# ════════════════════════════════════════════════════════════════════════════════════════════════════

@dataclass(frozen=True)
class Number:
    value: int | float
    family: str | None  # unit family ("second", "money", ...) or None when the number has no unit
    pos: int


@dataclass(frozen=True)
class CityMention:
    city: City | None  # None: a place name found by pattern ("weather in Springfield"), not the gazetteer
    surface: str
    pos: int


@dataclass(frozen=True)
class Facts:
    """Everything step 3 can put into an argument, read once from a piece of text."""

    text: str
    low: str
    numbers: tuple[Number, ...] = ()
    dates: tuple[tuple[int, date, date], ...] = ()  # (position, first day, last day) per mention
    currencies: tuple[str, ...] = ()                # codes in order of mention
    base: str | None = None
    quote: str | None = None
    cities: tuple[CityMention, ...] = ()
    quoted: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()                     # IANA names written out ("Europe/Paris")
    assigned: tuple[tuple[str, Any], ...] = ()      # values dictated as name=value ("x=abc")


def read_facts(text: str) -> Facts:
    """Find every value the text offers; each finder masks what it took so numbers inside dates,
    quotes and ids are not read twice."""
    text = normalise(text)
    low = _lower_aligned(text)
    quoted, masked = _find_quoted(text, low)
    ids, masked = _find_ids(text, masked)
    dates, masked = _find_dates(masked)
    currencies, no_money = _find_currencies(masked)
    base, quote = _currency_roles(masked, currencies)
    return Facts(text, low, numbers=tuple(_find_numbers(masked)), dates=tuple(dates),
                 currencies=tuple(dict.fromkeys(code for code, _, _ in currencies)), base=base, quote=quote,
                 cities=tuple(_find_cities(text, no_money)), quoted=tuple(quoted), ids=tuple(ids),
                 zones=tuple(re.findall(r"\b[A-Z][a-z]+/[A-Z][A-Za-z_]+\b", text)),
                 assigned=tuple(_find_assignments(text)))


def _find_assignments(text: str) -> list[tuple[str, Any]]:
    """`x=abc`, `limit: 5`, `city="Tokyo"`: the user dictates a value; numbers and booleans are
    read as JSON, anything else stays a string (so "x=abc" for an integer reaches the schema gate)."""
    found = []
    for m in re.finditer(r"(?<![\w/])([A-Za-z_]\w*)\s*[=:](?!//)\s*(\"[^\"]*\"|'[^']*'|[^\s,;]+)", text):
        raw = m.group(2)
        if raw[:1] in "\"'" and len(raw) >= 2:
            found.append((m.group(1), raw[1:-1]))
        else:
            value = _json_or_none(raw)
            found.append((m.group(1), value if isinstance(value, (int, float, bool)) else raw))
    return found


def _lower_aligned(text: str) -> str:
    """Lower-case without changing length (a few characters grow when lowered), so positions agree."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _mask(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _find_quoted(text: str, low: str) -> tuple[list[str], str]:
    found = []
    pattern = r"\"([^\"]+)\"|“([^”]+)”|「([^」]+)」|『([^』]+)』|(?:(?<=\s)|^)'([^']+)'(?=[\s.,!?]|$)"
    for m in re.finditer(pattern, text):
        found.append((m.start(), next(g for g in m.groups() if g)))
        low = _mask(low, m.start(), m.end())
    return [value for _, value in sorted(found)], low


def _find_ids(text: str, low: str) -> tuple[list[str], str]:
    found = []
    for m in re.finditer(r"\b[A-Z]{2,}[-_]?\d+\b", text):
        if low[m.start():m.end()].strip():  # not inside a quoted string already taken
            found.append(m.group())
            low = _mask(low, m.start(), m.end())
    return found, low


_MONTH_RE = "|".join(sorted(MONTHS, key=len, reverse=True))
DATE_PATTERNS: tuple[tuple[str, str], ...] = (
    # (kind, regex on lower-case text); earlier patterns win, and mask what they match
    ("mmy", rf"\b({_MONTH_RE})\.?\s+(?:and|to|through|until|-)\s+({_MONTH_RE})\.?,?\s+(\d{{4}})\b"),
    ("ymm", r"(\d{4})年(\d{1,2})月(?:から|~|-|〜|到|至)(\d{1,2})月"),
    ("ymd", r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)"),
    ("ymd", r"(\d{4})年(\d{1,2})月(\d{1,2})[日号]"),
    ("ym", r"(\d{4})年(\d{1,2})月(?!\d)"),
    ("mdy", rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"),
    ("dmy", rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_RE})\.?,?\s+(\d{{4}})\b"),
    ("my", rf"\b({_MONTH_RE})\.?,?\s+(?:of\s+)?(\d{{4}})\b"),
    ("ym", r"(?<!\d)(\d{4})-(\d{1,2})(?![\d-])"),
    ("y", r"(\d{4})年(?!\d)"),
    ("y", r"\b(?:in|during|for|from|of)\s+(\d{4})\b"),
)


def _find_dates(low: str) -> tuple[list[tuple[int, date, date]], str]:
    found = []
    for kind, pattern in DATE_PATTERNS:
        for m in re.finditer(pattern, low):
            two_months = kind in ("mmy", "ymm")
            span = _two_month_span(kind, m.groups()) if two_months else _date_span(kind, m.groups())
            if span is not None:
                found.append((m.start(), *span))
                low = _mask(low, m.start(), m.end())
    return sorted(found), low


def _date_span(kind: str, groups: tuple[str, ...]) -> tuple[date, date] | None:
    """A mention as (first day, last day): one day for a date, the whole month for "January 2026"."""
    g = {"ymd": (0, 1, 2), "mdy": (2, 0, 1), "dmy": (2, 1, 0), "ym": (0, 1, None), "my": (1, 0, None),
         "y": (0, None, None)}[kind]
    try:
        year = int(groups[g[0]])
        month = None if g[1] is None else _month_number(groups[g[1]])
        day = None if g[2] is None else int(groups[g[2]])
        if not 1900 <= year <= 2100:
            return None
        if month is None:
            return date(year, 1, 1), date(year, 12, 31)
        if day is None:
            return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])
        return date(year, month, day), date(year, month, day)
    except (ValueError, KeyError):
        return None


def _two_month_span(kind: str, groups: tuple[str, ...]) -> tuple[date, date] | None:
    """"January to March 2026" / "2026年1月から3月": the first month's first day to the last one's last."""
    year, first, last = (groups[2], groups[0], groups[1]) if kind == "mmy" else groups
    start, end = _date_span("ym", (year, first)), _date_span("ym", (year, last))
    return (start[0], end[1]) if start and end and start[0] <= end[1] else None


def _month_number(text: str) -> int:
    return int(text) if text.isdigit() else MONTHS[text]


_CURRENCY_FORMS = sorted(((form, code) for code, forms in CURRENCIES.items() for form in forms),
                         key=lambda fc: len(fc[0]), reverse=True)


def _find_currencies(low: str) -> tuple[list[tuple[str, int, int]], str]:
    """(code, start, end) per mention, longest form first ("豪ドル" is AUD, not USD)."""
    found = []
    for form, code in _CURRENCY_FORMS:
        for start, end in _positions(low, form):
            found.append((code, start, end))
            low = _mask(low, start, end)
    return sorted(found, key=lambda m: m[1]), low


# Words right before/after a currency that say which side it is on: "how many yen" asks for the
# quote; "1 dollar", "per dollar", "ドルから" name the base.
QUOTE_BEFORE = re.compile(r"(?:\b(?:how\s+many|how\s+much|into|in|to)|何|多少|/|->|→)\s*$")
QUOTE_AFTER = re.compile(r"^\s*(?:に|へ|で)")
BASE_BEFORE = re.compile(r"(?:\d|\bone|\ba|\ban|\bper)\s*$")
BASE_AFTER = re.compile(r"^\s*(?:から|to\b|/|->|→|兑|\d)")


def _currency_roles(low: str, mentions: list[tuple[str, int, int]]) -> tuple[str | None, str | None]:
    """Which mentioned currency is the base and which the quote ("1ドル何円" → USD, JPY)."""
    def flagged(pattern_before: re.Pattern, pattern_after: re.Pattern, skip: str | None) -> str | None:
        for code, start, end in mentions:
            if code != skip and (pattern_before.search(low[max(0, start - 12):start])
                                 or pattern_after.search(low[end:end + 4])):
                return code
        return None

    quote = flagged(QUOTE_BEFORE, QUOTE_AFTER, None)
    base = flagged(BASE_BEFORE, BASE_AFTER, quote)
    rest = [code for code in dict.fromkeys(c for c, _, _ in mentions) if code not in (base, quote)]
    if base is None and rest:
        base = rest.pop(0)
    if quote is None and rest:
        quote = rest.pop(0)
    return base, quote


_CITY_FORMS = sorted(((name, city) for city in CITIES for name in city.names()),
                     key=lambda nc: len(nc[0]), reverse=True)
_NOT_PLACES = frozenset(list(MONTHS) + ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                        "sunday", "english", "japanese", "chinese", "celsius", "fahrenheit"])


def _find_cities(text: str, low: str) -> list[CityMention]:
    """Gazetteer names first; if none, a place-like phrase ("in Springfield", "札幌市の天気")."""
    found = []
    for name, city in _CITY_FORMS:
        for start, end in _positions(low, name.lower()):
            found.append(CityMention(city, text[start:end], start))
            low = _mask(low, start, end)
    return sorted(found, key=lambda c: c.pos) or _place_by_pattern(text)


PLACE_PATTERNS = (
    r"\b(?:in|for|at)\s+([A-Z][A-Za-z'-]+(?:\s+[A-Z][A-Za-z'-]+)*)",
    r"([\u4e00-\u9fff\u30a0-\u30ff]{1,10})の(?:天気|気温|天候|予報|時刻|時間|現在時刻)",
    r"([\u4e00-\u9fff]{2,6})的(?:天气|气温|时间)",
)


def _place_by_pattern(text: str) -> list[CityMention]:
    for pattern in PLACE_PATTERNS:
        m = re.search(pattern, text)
        if m and m.group(1).lower() not in _NOT_PLACES:
            return [CityMention(None, m.group(1), m.start(1))]
    return []


def _find_numbers(low: str) -> list[Number]:
    found = []
    for m in re.finditer(r"(?<![A-Za-z0-9_.\-])(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\d])", low):
        found.append(Number(_as_number(m.group(1)), _unit_family(low[m.end():m.end() + 12]), m.start()))
    for m in re.finditer(r"\b(" + "|".join(SPELLED_NUMBERS) + r")\b", low):
        found.append(Number(SPELLED_NUMBERS[m.group(1)], _unit_family(low[m.end():m.end() + 12]), m.start()))
    return sorted(found, key=lambda n: n.pos)


def _as_number(text: str) -> int | float:
    text = text.replace(",", "")  # "1,000" is one thousand
    return float(text) if "." in text else int(text)


def _unit_family(after: str) -> str | None:
    after = after.lstrip()
    for family, (units, _) in UNIT_FAMILIES.items():
        for unit in units:
            if after.startswith(unit) and not (unit.isascii() and unit.isalpha()
                                               and after[len(unit):len(unit) + 1].isalpha()):
                return family
    return None


def _positions(low: str, form: str) -> list[tuple[int, int]]:
    """Where `form` occurs: whole words for Latin forms, anywhere for CJK and symbols."""
    if not form:
        return []
    return [(m.start(), m.end()) for m in _form_regex(form).finditer(low)]


def _mentions(low: str, forms: Iterable[str]) -> bool:
    forms = tuple(f for f in forms if f)
    return bool(forms) and _forms_regex(forms).search(low) is not None


@lru_cache(maxsize=4096)
def _form_regex(form: str) -> re.Pattern:
    if re.fullmatch(r"[a-z0-9 .'-]+", form):  # plurals count: "invoices" mentions "invoice"
        plural = "(?:e?s)?" if form[-1].isalpha() else ""
        return re.compile(r"(?<![a-z0-9])" + re.escape(form) + plural + r"(?![a-z0-9])")
    return re.compile(re.escape(form))


@lru_cache(maxsize=1024)
def _forms_regex(forms: tuple[str, ...]) -> re.Pattern:
    """One compiled alternation per word list: matching is the reasoner's hot loop."""
    return re.compile("|".join(f"(?:{_form_regex(f).pattern})" for f in forms))


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# 2. Choose tools: split the request into asks, match each ask to the best tool
# ════════════════════════════════════════════════════════════════════════════════════════════════════

@dataclass(frozen=True)
class Ask:
    """One thing the user asked for, and the tool chosen for it (with its score, for the notes)."""

    text: str
    tool: ToolSpec
    score: int


# "東京の天気と、1ドル何円か" / "the weather in Tokyo and how many yen..." / "天气，还有汇率"
ASK_SEPARATORS = re.compile(
    r"\s+(?:and|also|then|as well as)\s+|[;、。!?]\s*|,(?!\s*\d)\s*"
    r"|(?<=[\u30a0-\u30ff\u4e00-\u9fffA-Za-z0-9])と(?![いう思])|以及|还有|然后|并且|(?<=[\u4e00-\u9fff])和")


def split_asks(text: str) -> list[tuple[int, int]]:
    """Spans of the pieces between separators ("and", "と", "、", "还有", ...), empty pieces dropped."""
    spans, start = [], 0
    for m in ASK_SEPARATORS.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def choose_tools(text: str, tools: tuple[ToolSpec, ...]) -> list[Ask]:
    """Match every piece to its best tool, then glue pieces that chose nothing to a neighbour:
    "東京と大阪の天気" is one ask about two cities, not an ask about "東京" alone."""
    asks: list[list] = []  # [start, end, tool, score], growing as pieces are glued on
    prefix: int | None = None  # where leading pieces that chose no tool began
    for start, end in split_asks(text):
        tool, score = best_tool(text[start:end], tools)
        if tool is None and not asks:
            prefix = start if prefix is None else prefix
        elif tool is None or (asks and _same_ask(text, asks[-1], start, end, tool)):
            asks[-1][1], asks[-1][3] = end, max(asks[-1][3], score)
        else:
            asks.append([start if prefix is None else prefix, end, tool, score])
            prefix = None
    return [Ask(text[a:b], tool, score) for a, b, tool, score in asks]


def _same_ask(text: str, last: list, start: int, end: int, tool: ToolSpec) -> bool:
    """Neighbouring pieces for the same tool are one ask unless each makes a whole call on its own:
    "ドルと円のレート" is one ask; "ユーロ円のレートと、ポンドドルのレート" are two."""
    if last[2].name != tool.name:
        return False
    alone = complete(tool, read_facts(text[last[0]:last[1]])), complete(tool, read_facts(text[start:end]))
    return not all(alone)


def best_tool(text: str, tools: Iterable[ToolSpec], threshold: int = MATCH_THRESHOLD
              ) -> tuple[ToolSpec | None, int]:
    """The highest-scoring tool for this text, or None below the threshold. On a tie, a tool the text
    can fill completely wins ("記憶した都市を教えて" → current_city(), not remember_city(city=?))."""
    keys, facts = text_keys(text), read_facts(text)
    scored = [(_score(keys, facts, tool), tool) for tool in tools]
    top = max((score for score, _ in scored), default=threshold - 1)
    if top < threshold:
        return None, max(top, 0)
    tied = [tool for score, tool in scored if score == top]
    return next((t for t in tied if complete(t, facts)), tied[0]), top


def complete(tool: ToolSpec, facts: Facts) -> bool:
    """Can these facts fill every required parameter of the tool?"""
    args = fill_arguments(tool, facts)
    return all(p.name in args for p in parameters(tool) if p.required)


def score_tool(text: str, tool: ToolSpec) -> int:
    """How well a tool fits a piece of request text (see `_score`)."""
    return _score(text_keys(text), read_facts(text), tool)


def _score(request: set[str], facts: Facts, tool: ToolSpec) -> int:
    """3 per shared concept, 2 per word of the tool's name, 1 per other shared word or CJK pair,
    1 per kind of value the text holds that a parameter wants (a city for `city`, a date for a date)."""
    name, other = _tool_keys(tool.name, tool_text(tool))
    concepts = {k for k in request if k.startswith("#")} & (name | other)
    words = {k for k in request if not k.startswith("#")}
    score = 3 * len(concepts) + sum(2 if w in name else 1 if w in other else 0 for w in words)
    return score + _value_bonus(facts, parameters(tool))


def _value_bonus(facts: Facts, params: list[Param]) -> int:
    roles = {p.role for p in params}
    wanted = [(facts.cities, {"city", "timezone"}), (facts.dates, {"date", "start", "end"}),
              (facts.currencies, {"base", "quote", "currency"})]
    return sum(1 for found, kinds in wanted if found and roles & kinds)


@lru_cache(maxsize=1024)
def _tool_keys(name: str, text: str) -> tuple[frozenset, frozenset]:
    return frozenset(text_keys(_split_identifier(name))), frozenset(text_keys(text))


def text_keys(text: str) -> set[str]:
    """What a text is about: "#concept" keys, stemmed English words, and pairs of Han/katakana characters."""
    low = _lower_aligned(normalise(_split_identifier(text)))
    keys = {"#" + concept for concept, forms in CONCEPTS.items() if _mentions(low, forms)}
    keys |= {_stem(w) for w in re.findall(r"[a-z][a-z0-9]+", low) if w not in STOPWORDS}
    for run in re.findall(r"[\u4e00-\u9fff\u30a0-\u30ff]{2,}", low):
        keys |= {run[i:i + 2] for i in range(len(run) - 1)}
    return keys


def tool_text(tool: ToolSpec) -> str:
    """The words a model reads about a tool: description, parameter names, their descriptions and enums."""
    parts = [tool.description if isinstance(tool.description, str) else ""]
    for p in parameters(tool):
        enum = p.schema.get("enum")
        parts += [_split_identifier(p.name), str(p.schema.get("description") or "")]
        parts += [v for v in enum if isinstance(v, str)] if isinstance(enum, list) else []
    return " ".join(parts)


def _split_identifier(name: str) -> str:
    """get_exchange_rate → "get exchange rate"; searchInvoices → "search Invoices"."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")


def _stem(word: str) -> str:
    """Crude English stemming, the same on both sides: invoices → invoice, cities → city."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if word.endswith("s") and len(word) > 3 and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# 3. Fill arguments: one value per parameter that the text supports, nothing invented
# ════════════════════════════════════════════════════════════════════════════════════════════════════

@dataclass(frozen=True)
class Param:
    """One parameter as the reasoner sees it: schema, whether required, and what it is for (`role`)."""

    name: str
    schema: dict
    required: bool
    role: str    # enum, const, number, boolean, array, date, start, end, base, quote, currency,
    #              timezone, city, identifier, text, other
    hints: str   # lower-case words about it: its name, description, tool sentences naming it
    type: str    # the first non-null JSON type, "" when untyped
    nullable: bool


def parameters(tool: ToolSpec) -> list[Param]:
    """The tool's parameters in schema order, skipping anything that is not a usable property."""
    try:  # cached by content: the same tools arrive with every request
        key = json.dumps([tool.description, tool.parameters], sort_keys=True)
    except (TypeError, ValueError, RecursionError):  # not plain JSON: work it out afresh
        return _parameters(tool)
    return list(_parameters_of_json(key))


@lru_cache(maxsize=1024)
def _parameters_of_json(key: str) -> tuple[Param, ...]:
    description, schema = json.loads(key)
    return tuple(_parameters(ToolSpec("", description, schema)))


def _parameters(tool: ToolSpec) -> list[Param]:
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    description = tool.description if isinstance(tool.description, str) else ""
    out = []
    for name, sub in props.items():
        if isinstance(name, str) and isinstance(sub, dict):
            out.append(_param(name, sub, name in required, description))
    return out


def _param(name: str, schema: dict, required: bool, tool_description: str) -> Param:
    types = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    types = [t for t in types if isinstance(t, str)]
    main = next((t for t in types if t != "null"), "")
    own = " ".join(str(schema.get(k) or "") for k in ("description", "title", "format"))
    named = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")
    sentences = " ".join(s for s in re.split(r"[。.;\n]", tool_description) if named.search(s))
    words = _split_identifier(name).lower()
    hints = _lower_aligned(normalise(f"{words} {own} {sentences}"))
    own, sentences = _lower_aligned(normalise(own)), _lower_aligned(normalise(sentences))
    role = _role(name, schema, main, words, own, sentences)
    return Param(name, schema, required, role, hints, main, "null" in types)


def _role(name: str, schema: dict, type_: str, words: str, own: str, sentences: str) -> str:
    """What a parameter is for: first from its schema's shape, then its name, its description, and
    finally the tool's sentences that mention it ("baseとquoteはISO 4217の…")."""
    if "const" in schema:
        return "const"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "enum"
    shape = {"array": "array", "integer": "number", "number": "number", "boolean": "boolean"}.get(type_)
    if shape or type_ not in ("string", ""):
        return shape or "other"
    if schema.get("format") in ("date", "date-time"):
        return _direction(words, "date")
    for text in (words, own, sentences):
        role = _role_from_words(text, words)
        if role:
            return role
    return "text"


def _role_from_words(text: str, name_words: str) -> str | None:
    names = set(name_words.split())
    if _mentions(text, ROLE_WORDS["date"]):
        return _direction(name_words, "date")
    if _mentions(text, ROLE_WORDS["currency"]) or names & {"base", "quote"}:
        return "quote" if names & set(QUOTE_WORDS) else "base" if names & set(BASE_WORDS) else "currency"
    for role in ("timezone", "city"):
        if _mentions(text, ROLE_WORDS[role]):
            return role
    if names and name_words.split()[-1] in ID_WORDS:
        return "identifier"
    return None


def _direction(name_words: str, default: str) -> str:
    names = set(name_words.split())
    return "start" if names & set(START_WORDS) else "end" if names & set(END_WORDS) else default


MISSING = object()  # "the text holds no value for this parameter" (None is a real JSON value)


def fill_arguments(tool: ToolSpec, facts: Facts, context: Facts | None = None) -> dict:
    """Step 3: a value for every parameter the text supports — from the ask first, then from the whole
    request. A parameter with no value is left out (the schema gate will say so), unless it is
    required and the schema itself offers a default (or allows null)."""
    args: dict = {}
    taken_here, taken_there = set(), set()  # numbers and quotes already used, per text
    for p in parameters(tool):
        value = find_value(p, facts, taken_here)
        if value is MISSING and context is not None:
            value = find_value(p, context, taken_there)
        if value is MISSING:
            value = _fallback(p)
        if value is not MISSING:
            args[p.name] = value
    return args


def find_value(p: Param, facts: Facts, taken: set) -> Any:
    """A value dictated for this name wins; otherwise the role decides which finder reads the facts."""
    dictated = [value for name, value in facts.assigned if name == p.name]
    if dictated:
        return dictated[0]
    return FINDERS.get(p.role, _nothing)(p, facts, taken)


def _fallback(p: Param) -> Any:
    if not p.required:
        return MISSING
    if "default" in p.schema:
        return p.schema["default"]
    return None if p.nullable else MISSING


def _nothing(p: Param, facts: Facts, taken: set) -> Any:
    return MISSING


def _find_enum(p: Param, facts: Facts, taken: set) -> Any:
    """The enum value mentioned first, literally or through a synonym, city or currency name."""
    best: tuple[int, Any] | None = None
    for value in p.schema["enum"]:
        pos = _enum_position(value, facts)
        if pos is not None and (best is None or pos < best[0]):
            best = (pos, value)
    return MISSING if best is None else best[1]


def _enum_position(value: Any, facts: Facts) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    if not isinstance(value, str):
        return next((n.pos for n in facts.numbers if n.value == value), None)
    city = _city_named(value)
    if city is not None:  # via the mentions, so a fan-out over cities picks one city per call
        return next((c.pos for c in facts.cities if c.city == city), None)
    forms = {value.lower(), value.lower().replace("_", " "), *ENUM_SYNONYMS.get(value.lower(), ())}
    forms |= set(CURRENCIES.get(value.upper(), ()))
    hits = [start for form in forms for start, _ in _positions(facts.low, _lower_aligned(normalise(form)))]
    return min(hits) if hits else None


def _city_named(name: str) -> City | None:
    return next((c for c in CITIES if name.lower() in (n.lower() for n in c.names())), None)


def _find_const(p: Param, facts: Facts, taken: set) -> Any:
    return p.schema["const"]


def _find_number(p: Param, facts: Facts, taken: set) -> Any:
    """A number with a matching unit ("5秒" → seconds); for a required parameter, else the next bare one."""
    family = next((f for f, (_, words) in UNIT_FAMILIES.items() if _mentions(p.hints, words)), None)
    candidates = [n for n in facts.numbers if n.pos not in taken and family and n.family == family]
    if not candidates and p.required:
        candidates = [n for n in facts.numbers if n.pos not in taken and n.family is None]
    if not candidates:
        return MISSING
    taken.add(candidates[0].pos)
    value = candidates[0].value
    return int(value) if p.type == "integer" and float(value).is_integer() else value


def _find_date(p: Param, facts: Facts, taken: set) -> Any:
    """Start: the first mention's first day. End: the last mention's last day. Single date: the first."""
    if not facts.dates:
        return MISSING
    if p.role == "end":
        return _format_date(facts.dates[-1][2], p.schema.get("format"), end=True)
    return _format_date(facts.dates[0][1], p.schema.get("format"), end=False)


def _format_date(day: date, fmt: Any, end: bool) -> str:
    if fmt == "date-time":
        return f"{day.isoformat()}T{'23:59:59' if end else '00:00:00'}Z"
    return day.isoformat()


def _find_currency(p: Param, facts: Facts, taken: set) -> Any:
    value = {"base": facts.base, "quote": facts.quote}.get(p.role, facts.base)
    return MISSING if value is None else value


def _find_city(p: Param, facts: Facts, taken: set) -> Any:
    """The first city, in the form the parameter asks for ("cityは日本語の都市名で渡す" → 東京)."""
    if not facts.cities:
        return MISSING
    mention = facts.cities[0]
    if mention.city is None:
        return mention.surface
    if _mentions(p.hints, ("日本語", "japanese")):
        return mention.city.ja
    if _mentions(p.hints, ("中文", "中国語", "chinese")):
        return mention.city.zh
    if _mentions(p.hints, ("英語", "english")) or mention.surface.isascii():
        return mention.city.en
    return mention.surface


def _find_timezone(p: Param, facts: Facts, taken: set) -> Any:
    if facts.zones:
        return facts.zones[0]
    known = [c.city for c in facts.cities if c.city is not None]
    return known[0].tz if known else MISSING


def _find_identifier(p: Param, facts: Facts, taken: set) -> Any:
    return facts.ids[0] if facts.ids else _find_text(p, facts, taken)


def _find_text(p: Param, facts: Facts, taken: set) -> Any:
    """A quoted string if there is one; for a required query-like parameter ("query", "q", "text"...),
    the request's remaining noun phrase. Other strings ("customer") stay empty rather than get nonsense."""
    for i, value in enumerate(facts.quoted):
        if ("q", i) not in taken:
            taken.add(("q", i))
            return value
    if p.required and _mentions(p.hints, TEXT_WORDS):
        phrase = noun_phrase(facts.text)
        return phrase if phrase else MISSING
    return MISSING


def _find_array(p: Param, facts: Facts, taken: set) -> Any:
    """A list parameter gets every value of the kind its items hold (all cities, all enum values...)."""
    items = p.schema.get("items") if isinstance(p.schema.get("items"), dict) else {}
    item = replace(_param(p.name, items, p.required, ""), hints=p.hints)
    if isinstance(items.get("enum"), list):
        values = [v for v in items["enum"] if _enum_position(v, facts) is not None]
    elif item.role == "text" and _mentions(p.hints, ROLE_WORDS["city"]) or item.role == "city":
        values = [_find_city(item, replace(facts, cities=(c,)), taken) for c in facts.cities]
    elif item.role in ("base", "quote", "currency"):
        values = list(facts.currencies)
    elif item.role == "number":
        values = [n.value for n in facts.numbers]
    else:
        values = list(facts.quoted)
    return values if values else MISSING


FINDERS: dict[str, Callable[[Param, Facts, set], Any]] = {
    "enum": _find_enum, "const": _find_const, "number": _find_number, "array": _find_array,
    "date": _find_date, "start": _find_date, "end": _find_date,
    "base": _find_currency, "quote": _find_currency, "currency": _find_currency,
    "city": _find_city, "timezone": _find_timezone, "identifier": _find_identifier, "text": _find_text,
}

# Request verbs and politeness around the thing asked about: "search the web for X please" → X.
LEADING_VERBS = re.compile(
    r"^(?:please|pls|can you|could you|would you|will you|i want to know|i'd like to know|"
    r"search(?: the web| online)?(?: for)?|look up|find(?: me)?|tell me(?: about)?|what is|what's|"
    r"what are|who is|show me|get me|give me)\s+", re.IGNORECASE)
TRAILING_WORDS = ("ください", "下さい", "ちょうだい", "して", "て", "教え", "検索", "調べ", "探",
                  "について", "を", "は", "か", "吗", "一下", "搜索", "查找", "查询", "please", "for me")


def noun_phrase(text: str) -> str:
    """The request without its verbs and politeness: "東京の天気を調べて" → "東京の天気"."""
    phrase = text.strip()
    while True:
        before = phrase
        phrase = LEADING_VERBS.sub("", phrase).strip(" ?!.,。、")
        for word in TRAILING_WORDS:
            if phrase.endswith(word) and len(phrase) > len(word):
                phrase = phrase[:-len(word)].rstrip()
        if phrase == before:
            return phrase


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# 4. Plan the batch: what is done, what failed, what to call now
# ════════════════════════════════════════════════════════════════════════════════════════════════════

def plan_intents(text: str, tools: tuple[ToolSpec, ...], notes: list[str] | None = None
                 ) -> list[PlannedCall]:
    """Every call the request needs: one per ask, or one per city when an ask names several."""
    context = read_facts(text)
    intents: list[PlannedCall] = []
    for ask in choose_tools(text, tools):
        for facts in _fan_out(ask.tool, read_facts(ask.text)):
            intents.append(PlannedCall(ask.tool.name, fill_arguments(ask.tool, facts, context)))
            if notes is not None:
                notes.append(f"ask {ask.text.strip()!r} -> {ask.tool.name} (score {ask.score}), "
                             f"arguments {_key(intents[-1].arguments)}")
    return _dedupe(intents)


def follow_up_intents(text: str, earlier: str, tools: tuple[ToolSpec, ...]) -> list[PlannedCall]:
    """"And in Osaka?" names no tool, but the earlier request did: ask it again with the new values.
    Only calls the new text changes are kept, so "thanks!" after a question is not a follow-up."""
    before = plan_intents(earlier, tools)
    again = [PlannedCall(ask.tool.name, fill_arguments(ask.tool, facts, read_facts(ask.text)))
             for ask in choose_tools(earlier, tools) for facts in _fan_out(ask.tool, read_facts(text))]
    return _dedupe([c for c in again if c not in before and c.arguments])


def _fan_out(tool: ToolSpec, facts: Facts) -> list[Facts]:
    """Two cities for a tool that takes one city → two sets of facts, one city each."""
    places = [p for p in parameters(tool) if p.role in ("city", "timezone")
              or (p.role == "enum" and any(_city_named(str(v)) for v in p.schema["enum"]))]
    if not places or len(facts.cities) < 2:
        return [facts]
    return [replace(facts, cities=(c,)) for c in facts.cities]


def _dedupe(calls: list[PlannedCall]) -> list[PlannedCall]:
    seen, out = set(), []
    for call in calls:
        key = (call.name, _key(call.arguments))
        if key not in seen:
            seen.add(key)
            out.append(call)
    return out


def _key(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class Progress:
    """How far one intended call has got: its attempts so far (matched by tool name and arguments)."""

    intent: PlannedCall
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return any(a.outcome.ok for a in self.attempts)

    @property
    def errors(self) -> int:
        return sum(1 for a in self.attempts if not a.outcome.ok)


def track(intents: list[PlannedCall], attempts: Iterable[Attempt]) -> tuple[list[Progress], list[Attempt]]:
    """Give each attempt to the intent it served; attempts that served none (a wrong or unknown tool,
    an extra call) are returned as strays."""
    progress = [Progress(i) for i in intents]
    strays = []
    for attempt in attempts:
        target = _intent_for(progress, attempt.call)
        if target is None:
            strays.append(attempt)
        else:
            target.attempts.append(attempt)
    return progress, strays


def _intent_for(progress: list[Progress], call: ToolCall) -> Progress | None:
    open_ = [p for p in progress if p.intent.name == call.name and not p.done
             and p.errors < MAX_ERRORS_PER_ASK]
    args = _key(call.arguments)
    for test in (lambda p: _key(p.intent.arguments) == args,
                 lambda p: bool(p.attempts) and _key(p.attempts[-1].call.arguments) == args,
                 lambda p: not p.attempts, lambda p: True):
        found = next((p for p in open_ if test(p)), None)
        if found is not None:
            return found
    return None


def next_call(p: Progress, tool: ToolSpec | None) -> PlannedCall | None:
    """The call to send now for one intent: the first try, one corrected retry, or None (done/give up)."""
    if p.done or p.errors >= MAX_ERRORS_PER_ASK:
        return None
    if p.errors == 0:
        return p.intent
    failed = p.attempts[-1]
    fixed = repair(p.intent.arguments or {}, failed, tool)
    if failed.call.arguments is not None and _key(fixed) == _key(failed.call.arguments):
        return None  # the same call would fail the same way: explain instead
    return PlannedCall(p.intent.name, fixed)


def repair(arguments: dict, failed: Attempt, tool: ToolSpec | None) -> dict:
    """Read the error and fix what it names: send valid JSON after bad_json; take a value back from the
    failed call when only its type ("5" for 5) or its spelling ("Paid" for "paid") was wrong."""
    fixed = dict(arguments)
    wrong = failed.call.arguments or {}
    name = _field_named(failed.outcome)
    params = {p.name: p for p in parameters(tool)} if tool is not None else {}
    if name in wrong and name not in fixed and name in params:
        value = _coerce(wrong[name], params[name])
        if value is not MISSING:
            fixed[name] = value
    return fixed


def _field_named(outcome: Outcome) -> str | None:
    """The field an error is about: from its path ("$.city") or its message ("… 'city' …")."""
    if outcome.path:
        m = re.match(r"([A-Za-z_][\w-]*)", outcome.path.lstrip("$").lstrip("./"))
        if m:
            return m.group(1)
    m = re.search(r"'([A-Za-z_][\w-]*)'", outcome.message)
    return m.group(1) if m else None


def _coerce(value: Any, p: Param) -> Any:
    """"5" → 5 for a number; "Paid" → "paid" for an enum; anything else cannot be saved."""
    if p.role == "number" and isinstance(value, str):
        try:
            number = _as_number(value.strip())
        except ValueError:
            return MISSING
        return int(number) if p.type == "integer" and float(number).is_integer() else number
    if p.role == "enum" and isinstance(value, str):
        same = [v for v in p.schema["enum"] if isinstance(v, str) and v.lower() == value.lower()]
        return same[0] if same else MISSING
    return MISSING


def tool_choice_of(options: ModelOptions, tools: tuple[ToolSpec, ...]) -> tuple[str, str | None]:
    """("auto" | "none" | "required", forced tool name or None), whatever shape the choice came in."""
    choice = options.tool_choice
    if isinstance(choice, dict):
        function = choice.get("function")
        name = choice.get("name") or (function.get("name") if isinstance(function, dict) else None)
        if isinstance(name, str) and any(t.name == name for t in tools):
            return "required", name
        kind = choice.get("type")
        choice = kind if isinstance(kind, str) else "required"
    if not isinstance(choice, str):
        return "auto", None
    choice = {"any": "required", "tool": "required", "function": "required"}.get(choice, choice)
    return (choice if choice in ("auto", "none", "required") else "auto"), None


def turn_cap(intents: list[PlannedCall]) -> int:
    """However things go, stop calling after this many turns (each ask: a try and a retry, plus slack)."""
    return 2 * max(1, len(intents)) + 2


def plan_batch(s: Situation, progress: list[Progress]) -> list[PlannedCall]:
    """This turn's calls, honouring tool_choice and parallel_tool_calls=False (one call per turn)."""
    mode, forced = tool_choice_of(s.options, s.tools)
    by_name = {t.name: t for t in s.tools}
    calls = [c for c in (next_call(p, by_name.get(p.intent.name)) for p in progress) if c is not None]
    if forced is not None:
        calls = [c for c in calls if c.name == forced] or [fresh_call(s.text, by_name[forced])]
    elif mode == "required" and not calls:
        calls = [fresh_call(s.text, best_tool(s.text, s.tools, threshold=-10**9)[0] or s.tools[0])]
    elif mode == "auto" and s.turns >= turn_cap([p.intent for p in progress]):
        calls = []
    if s.options.parallel_tool_calls is False:
        calls = calls[:1]
    return calls


def fresh_call(text: str, tool: ToolSpec) -> PlannedCall:
    """A call to this tool with whatever the whole request offers for its arguments."""
    return PlannedCall(tool.name, fill_arguments(tool, read_facts(text)))


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# 5. Compose the answer, in the user's language
# ════════════════════════════════════════════════════════════════════════════════════════════════════

def compose_answer(s: Situation, progress: list[Progress], strays: list[Attempt],
                   tools_off: bool = False) -> str:
    """Quote every result that came back; explain every ask that failed for good."""
    say = PHRASES[s.language]
    lines = [f"- {a.call.name}: {render(a.outcome.value)}" for a in _successes(s.attempts)]
    failures = [p.attempts[-1] for p in progress if not p.done and p.errors]
    if not lines and not failures:
        failures = [a for a in strays if not a.outcome.ok][-1:]
    header = say["found"] if lines else say["sorry"]
    lines += ["- " + say["failed"].format(name=a.call.name or "tool", why=_why(a.outcome)) for a in failures]
    if lines:
        return "\n".join([header, *lines])
    return reply_without_tools(s, [p.intent for p in progress], tools_off)


def _successes(attempts: Iterable[Attempt]) -> list[Attempt]:
    seen, out = set(), []
    for a in attempts:
        key = (a.call.name, _key(a.outcome.value))
        if a.outcome.ok and key not in seen:
            seen.add(key)
            out.append(a)
    return out


def _why(outcome: Outcome) -> str:
    message = _shorten(outcome.message.strip() or outcome.kind, 200)
    return f"{message} ({outcome.kind})" if outcome.kind not in ("", "error") else message


def reply_without_tools(s: Situation, intents: list[PlannedCall], tools_off: bool) -> str:
    """Small talk gets small talk; a request no tool fits gets an honest "I can't look that up"."""
    say, low = PHRASES[s.language], _lower_aligned(s.text)
    if tools_off and intents:
        return say["tools_off"].format(names=", ".join(dict.fromkeys(i.name for i in intents)))
    if not s.text.strip():
        return say["empty"]
    if _mentions(low, THANKS):
        return say["thanks"]
    if _mentions(low, GREETINGS):
        return say["greeting"]
    return say["no_tool"]


def render(value: Any, limit: int = 300) -> str:
    """A result value as text: strings as they are, anything else as compact JSON."""
    text = value.strip() if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return _shorten(text, limit)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ════════════════════════════════════════════════════════════════════════════════════════════════════
# The whole pipeline
# ════════════════════════════════════════════════════════════════════════════════════════════════════

def decide(request: ChatRequest) -> Decision:
    """understand → choose → fill → plan → answer."""
    return decide_situation(understand(request))


def decide_situation(s: Situation) -> Decision:
    """Steps 2-5 on an understood request; `notes` record the asks, the attempts and the choice."""
    notes: list[str] = []
    progress, strays = track(_intents(s, notes), s.attempts)
    notes += [f"attempt {a.call.name}: {'ok' if a.outcome.ok else 'error ' + a.outcome.kind}"
              for a in s.attempts]
    mode, _ = tool_choice_of(s.options, s.tools)
    if not s.tools or mode == "none":
        return Decision(text=compose_answer(s, progress, strays, tools_off=True), notes=tuple(notes))
    calls = plan_batch(s, progress)
    if calls:
        notes.append(f"tool_choice {mode}: call {', '.join(c.name for c in calls)}")
        return Decision(calls=tuple(calls), notes=tuple(notes))
    notes.append("answer in text")
    return Decision(text=compose_answer(s, progress, strays), notes=tuple(notes))


def _intents(s: Situation, notes: list[str]) -> list[PlannedCall]:
    """The calls the request needs; for a follow-up ("And in Osaka?"), the earlier request's, redone."""
    if not s.tools or not s.text:
        return []
    intents = plan_intents(s.text, s.tools, notes)
    if not intents and s.earlier:
        intents = follow_up_intents(s.text, s.earlier, s.tools)
        notes += [f"follow-up of {s.earlier!r}: {i.name}({_key(i.arguments)})" for i in intents]
    return intents
