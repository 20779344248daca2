"""What the reasoner knows: every word list, in one place (step 0).

Concepts that link a request to a tool (天気/weather), enum synonyms, currencies, cities, the words that
say which side of a range or a currency pair a value is on, and the phrases of the answers. The lists
are small on purpose: extend them to teach the reasoner a new domain.
"""

from __future__ import annotations

from dataclasses import dataclass



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
#: How much of a request the reasoner reads: its first and last READ_LIMIT / 2 characters (a long pasted
#: document in between is skipped, as a small model's context would cut it), and at most MAX_ASKS asks.
#: They bound a decision's work whatever the prompt's size, so one long prompt cannot hold up a server.
READ_LIMIT = 8_000
MAX_ASKS = 16
