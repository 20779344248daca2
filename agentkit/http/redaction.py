"""Keys out of text: check a key once, then scrub it out of every message, body and log line.

    key = clean_key(os.environ["OPENAI_API_KEY"])   # "sk-...\\n" pasted from a file -> "sk-..."
    key_problem(key)                                 # None, or e.g. "has a non-ASCII character at position 7"
    checked_headers({"X-Title": " agentkit "})       # {"X-Title": "agentkit"}: header values checked the same way
    redact(f"401: bad key {key}", [key])             # "401: bad key ***"

    protect_library_logs()                           # once: a filter on httpx's and httpcore's loggers
    with scrubbing_logs(secret_forms([key])):        # their lines, in this thread or task, lose the key
        client.post(url, headers={"authorization": f"Bearer {key}"})

A key can leak in more shapes than its own: an error message may hold it escaped (`b'sk-...\\n'`), JSON-escaped,
or percent-encoded in a URL. `redact` replaces every one of those forms, then anything that looks like a
credential whatever its value (`?key=...`, `Bearer ...`). Checking the key when it is read is the other half:
a key with whitespace, a control character or a non-ASCII character inside it (a curly quote pasted from a
document) is refused with a message that names where it came from and where the bad character is — never
the key itself.

httpx logs every request URL at INFO ("HTTP Request: POST https://...?key=..."), and httpcore logs response
headers at DEBUG. `protect_library_logs()` adds a filter to those loggers (once per process) that scrubs,
from the lines written during a call, the secrets of that call (a ContextVar set by `scrubbing_logs`, so
each thread or task sees its own) and every credential-shaped value. Lines written outside a call are
left as they are.

Left out on purpose: secrets inside request bodies (agentkit never logs a body), and secret scanning of
free text that does not contain the key or a credential marker.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

__all__ = ["MASK", "MIN_SECRET_LENGTH", "checked_headers", "clean_key", "header_secrets", "key_problem",
           "protect_library_logs", "redact", "redact_json", "scrubbing_logs", "secret_forms", "url_secrets"]

MASK = "***"

#: Shorter values are not searched for in text: no provider issues a credential this short, and scrubbing
#: a one-letter test key would garble every word containing it ("chunk" -> "chun***").
MIN_SECRET_LENGTH = 8

#: Query parameters whose values are credentials (Gemini's `?key=`, Azure's `?code=`, signed URLs' `sig`).
CREDENTIAL_PARAMS = r"(?:key|api[_-]?key|access[_-]?token|token|sig|signature|code|auth|password|secret)"

_PATTERNS = (
    re.compile(rf"([?&;]{CREDENTIAL_PARAMS}=)[^&#\s'\"]+", re.IGNORECASE),
    re.compile(r"(\bBearer\s+)[^\s'\",;]{8,}", re.IGNORECASE),  # a token, not the next word of a sentence
)


# -- checking a key when it is read ---------------------------------------------------------------------

def clean_key(value: str | None) -> str | None:
    """The key without surrounding whitespace (a newline pasted from a file), or None when nothing is left."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"an API key must be a string, not {type(value).__name__}")
    return value.strip() or None


def key_problem(key: str) -> str | None:
    """What is wrong with a (cleaned) key, in words that never quote it; None when it looks like a key."""
    for position, char in enumerate(key):
        if char.isspace():
            return f"has whitespace inside it at position {position}"
        if ord(char) < 32 or ord(char) == 127:
            return f"has a control character at position {position}"
        if ord(char) > 126:
            return (f"has a non-ASCII character at position {position} (a curly quote or a letter pasted "
                    "from a document?); keys are plain ASCII")
    return None


def checked_headers(headers: dict) -> dict:
    """Extra request headers, each value stripped and checked like a key (spaces inside are fine:
    "Bearer x"); a ValueError names the header, never its value."""
    out = {}
    for name, value in headers.items():
        value = str(value).strip()
        problem = key_problem(value.replace(" ", "").replace("\t", ""))
        if problem:
            raise ValueError(f"headers[{name!r}] {problem}. The value is not shown.")
        out[name] = value
    return out


# -- which values are secrets, besides the key ---------------------------------------------------------

#: Header names whose values are credentials.
SECRET_HEADER = re.compile(r"auth|key|token|secret|signature|cookie", re.IGNORECASE)


def url_secrets(url: str) -> list[str]:
    """Values of credential query parameters in a URL: `url_secrets("https://h/v1?key=abc")` -> ["abc"]."""
    return [value for name, value in parse_qsl(urlsplit(url).query)
            if re.fullmatch(CREDENTIAL_PARAMS, name, re.IGNORECASE)]


def header_secrets(headers: dict[str, str]) -> list[str]:
    """Values of credential headers, and their last word ("Bearer <token>" -> the token too)."""
    found = []
    for name, value in headers.items():
        if SECRET_HEADER.search(name) and value:
            found.append(value)
            found.extend(value.split()[-1:])
    return found


# -- scrubbing text -------------------------------------------------------------------------------------

def secret_forms(secrets: Iterable[str | None]) -> tuple[str, ...]:
    """Every way a secret can appear in text: as is, escaped (repr, bytes, JSON) and percent-encoded.

    Longest first, so a form that contains another is replaced whole. Values shorter than
    MIN_SECRET_LENGTH are left out (see there).
    """
    forms: set[str] = set()
    for secret in secrets:
        if not secret or len(secret) < MIN_SECRET_LENGTH:
            continue
        forms.update((secret, repr(secret)[1:-1], repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
                      json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
                      quote(secret, safe=""), quote(secret), quote_plus(secret)))
    forms.discard("")
    return tuple(sorted(forms, key=len, reverse=True))


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every form of every secret, every `?key=` value and every bearer token replaced by ***.

        redact("GET /m?key=AIza123 failed", ["AIza123"])  ->  "GET /m?key=*** failed"
    """
    return _scrub(text, secret_forms(secrets))


def _scrub(text: str, forms: tuple[str, ...]) -> str:
    for form in forms:
        text = text.replace(form, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(rf"\1{MASK}", text)
    return text


def redact_json(value: Any, secrets: Iterable[str | None] = (), max_depth: int = 64) -> Any:
    """`value` (decoded JSON) with `redact` applied to every string, keys included.

    Nesting deeper than `max_depth` is cut (replaced by a note): a hostile body nested thousands deep
    must not turn an error report into a RecursionError.
    """
    forms = secret_forms(secrets)

    def scrub(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            return _scrub(item, forms)
        if depth >= max_depth and isinstance(item, (dict, list, tuple)):
            return f"[nested deeper than {max_depth}: left out]"
        if isinstance(item, dict):
            return {scrub(k, depth + 1): scrub(v, depth + 1) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [scrub(v, depth + 1) for v in item]
        return item

    return scrub(value, 0)


# -- log lines written by httpx and httpcore ------------------------------------------------------------

#: The secret forms of the call running in this thread or task; None outside every call (an empty tuple is a
#: call with no secret long enough to search for, whose `?key=` and bearer tokens are still masked by shape).
_CALL_SECRETS: ContextVar[tuple[str, ...] | None] = ContextVar("agentkit_call_secrets", default=None)

#: The loggers httpx and httpcore write to (a logger's filter does not see its children's records).
LIBRARY_LOGGERS = ("httpx", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy",
                   "httpcore.socks")


@contextmanager
def scrubbing_logs(forms: tuple[str, ...]) -> Iterator[None]:
    """While the block runs (in this thread or task), library log lines are scrubbed of these secrets
    (`forms`: from `secret_forms(secrets)`, computed once per model rather than once per read)."""
    token = _CALL_SECRETS.set(forms)
    try:
        yield
    finally:
        _CALL_SECRETS.reset(token)


class _ScrubFilter(logging.Filter):
    """Rewrites a record's message with `redact`; never drops a record, and leaves alone the records
    written outside a `scrubbing_logs` block (other code's use of httpx is not ours to edit)."""

    def filter(self, record: logging.LogRecord) -> bool:
        forms = _CALL_SECRETS.get()
        if forms is None:
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is the logging module's business, not ours
            return True
        clean = _scrub(message, forms)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


_FILTER = _ScrubFilter()


def protect_library_logs() -> None:
    """Add the scrubbing filter to httpx's and httpcore's loggers (idempotent: once per logger)."""
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
