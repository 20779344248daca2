"""No key leaks, whatever the key looks like and whatever goes wrong.

A key is planted (built at run time: no key-shaped literal in the repository, a secrets scanner reads it)
in every shape a user pastes — a trailing newline, spaces, curly quotes, a letter from another alphabet,
a very long one, one with `key=` or `%` inside — and every failure is provoked: a refused connection, a
401 that echoes the key, a header value HTTP does not allow, a malformed body that echoes it, a timeout.
The key must be found 0 times in str/repr/traceback of the error, repr(model), the attempt records and
every log line at DEBUG (agentkit's, httpx's, httpcore's).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import traceback
from contextlib import contextmanager
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentkit
from agentkit.core.errors import AuthenticationError, BadRequestError, ModelCallError, ProviderError
from agentkit.core.types import Message, ModelOptions
from agentkit.http import HTTPModel
from agentkit.http.redaction import (
    clean_key,
    header_secrets,
    key_problem,
    redact,
    redact_json,
    secret_forms,
    url_secrets,
)
from agentkit.lab import describe

MESSAGES = [Message.user("hi")]
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def planted(core: str) -> str:
    return "-".join(["sk", "plant", core])


# -- key shapes -----------------------------------------------------------------------------------------

cores = st.text(ALNUM, min_size=16, max_size=40)
SHAPES = {
    "plain": lambda k: k,
    "trailing newline": lambda k: k + "\n",
    "crlf": lambda k: k + "\r\n",
    "spaces around": lambda k: f"  {k} \t",
    "curly quotes": lambda k: f"\u201c{k}\u201d",
    "unicode inside": lambda k: k[:5] + "\u00e9" + k[5:],
    "zero-width space": lambda k: k + "\u200b",
    "newline inside": lambda k: k[:6] + "\n" + k[6:],
    "space inside": lambda k: k[:6] + " " + k[6:],
    "very long": lambda k: k * 60,
    "key= inside": lambda k: f"{k}&key={k[::-1]}",
    "percent and quotes": lambda k: f"{k}%2F'\"\\",
    "Bearer-like": lambda k: "Bearer" + k,
}
#: Where the key goes in: the api_key argument, the provider's env var, `?key=` in base_url, or a header.
PLACES = ["api_key", "env", "base_url", "header"]
FAILURES = ["refused", "401 echo", "bad header", "malformed body echo", "timeout"]


def forms_of(key: str) -> set[str]:
    """The planted key in the shapes a leak could take (stripped, escaped, percent-encoded)."""
    stripped = key.strip()
    out = {stripped, repr(stripped)[1:-1], json.dumps(stripped)[1:-1], quote(stripped, safe="")}
    return {f for f in out if len(f) >= 16}


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def echo_handler(failure: str):
    """A MockTransport handler for each failure, echoing whatever credential it was sent."""
    def received(request: httpx.Request) -> str:
        return " | ".join([request.headers.get("authorization", ""), request.headers.get("x-api-key", ""),
                           str(request.url)])

    def handler(request: httpx.Request) -> httpx.Response:
        seen = received(request)
        if failure == "401 echo":
            return httpx.Response(401, headers={"x-echo": seen.encode("ascii", "replace").decode()},
                                  json={"error": {"message": f"Incorrect API key provided: {seen}",
                                                  "type": "invalid_request_error", seen: seen}})
        if failure == "malformed body echo":
            return httpx.Response(200, content=f"<html>proxy error for {seen}</html>".encode())
        if failure == "timeout":
            raise httpx.ReadTimeout(f"timed out talking to {seen}", request=request)
        raise AssertionError(failure)

    return handler


@contextmanager
def captured_logs():
    """Every log record at DEBUG from agentkit, httpx and httpcore, formatted as a handler would."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect(logging.DEBUG)
    names = ["agentkit", "httpx", "httpcore"]
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.addHandler(handler)
    try:
        yield lines
    finally:
        for lg, level in zip(loggers, levels):
            lg.removeHandler(handler)
            lg.setLevel(level)


@contextmanager
def env_var(name: str, value: str | None):
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


async def no_wait(seconds: float) -> None:
    pass


def build_model(key: str, place: str, failure: str) -> HTTPModel:
    base = refused_url() if failure == "refused" else "http://127.0.0.1:9/v1"
    kw: dict = {"max_retries": 1, "sleep": lambda s: None, "asleep": no_wait, "timeout": 5.0}
    if failure != "refused":
        kw["transport"] = httpx.MockTransport(echo_handler(failure))
    if failure == "bad header":
        kw["headers"] = {"X-Debug": "trace\nid"}
    if place == "api_key":
        kw["api_key"] = key
    elif place == "env":
        kw["api_key"] = None
    elif place == "base_url":
        kw["api_key"] = ""
        base += "?key=" + quote(key.strip(), safe="")
    else:
        kw["api_key"] = ""
        kw["headers"] = {**kw.get("headers", {}), "X-Api-Key": key}
    return HTTPModel("m", "openai-chat", base_url=base, **kw)


def texts_of(error: BaseException) -> list[str]:
    texts = [str(error), repr(error), "".join(traceback.format_exception(error))]
    if isinstance(error, ProviderError):
        texts += [json.dumps(error.body, default=str), repr(error.attempts), str(error.error_type)]
    return texts


def assert_no_leak(key: str, texts: list[str]) -> None:
    for form in forms_of(key):
        for text in texts:
            assert form not in text, f"the key leaked: …{text[max(0, text.find(form) - 80):text.find(form)]}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(core=cores, shape=st.sampled_from(sorted(SHAPES)), place=st.sampled_from(PLACES),
       failure=st.sampled_from(FAILURES), use_async=st.booleans(), stream=st.booleans())
def test_a_planted_key_never_leaks(core, shape, place, failure, use_async, stream):
    key = SHAPES[shape](planted(core))
    with captured_logs() as lines, env_var("OPENAI_API_KEY", key if place == "env" else None):
        texts: list[str] = []
        try:
            model = build_model(key, place, failure)
        except (AuthenticationError, ValueError, TypeError) as refused:
            # Refused when built: the message says where the key came from, never what it is.
            source = {"api_key": "api_key", "env": "OPENAI_API_KEY", "header": "X-Api-Key",
                      "base_url": "headers"}[place]
            assert source in str(refused) or failure == "bad header"
            assert_no_leak(key, texts_of(refused) + lines)
            return
        texts.append(repr(model))
        options = ModelOptions(stream=stream)
        try:
            if use_async:
                asyncio.run(model.acomplete(MESSAGES, options=options))
            else:
                model.complete(MESSAGES, options=options)
        except ProviderError as error:
            texts += texts_of(error)
        else:
            pytest.fail("every failure path fails")
        finally:
            model.close()
        texts += [repr(model), repr(model.last_attempts), json.dumps([a.to_dict() for a in model.last_attempts])]
    assert_no_leak(key, texts + lines)
    assert lines  # the logs were really captured


# -- the checks when a key is read -----------------------------------------------------------------------

def test_a_pasted_newline_is_stripped_and_the_key_is_sent_clean():
    key = planted("A" * 20)
    seen = []
    model = HTTPModel("m", base_url="http://x/v1", api_key=key + "\n",
                      transport=httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(401)))
    with pytest.raises(AuthenticationError):
        model.complete(MESSAGES)
    assert seen[0].headers["authorization"] == f"Bearer {key}" and model.api_key == key


@pytest.mark.parametrize("bad,what", [("\u201c{k}\u201d", "non-ASCII"), ("{k}\u00e9", "non-ASCII"),
                                      ("{k}\x07", "control"), ("sk {k}", "whitespace")])
def test_a_malformed_env_key_is_refused_naming_the_variable_not_the_key(monkeypatch, bad, what):
    key = bad.format(k=planted("B" * 20))
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.delenv("AGENTKIT_BASE_URL", raising=False)
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY") as info:
        HTTPModel("gpt-x")
    assert what in str(info.value) and info.value.error_type == "malformed_key"
    assert planted("B" * 20) not in str(info.value)


def test_a_key_in_the_base_url_stays_out_of_repr_describe_and_httpx_logs(caplog):
    key = planted("C" * 20)
    caplog.set_level(logging.DEBUG)
    model = HTTPModel("m", base_url=f"http://x/v1?key={key}", api_key="",
                      transport=httpx.MockTransport(lambda r: httpx.Response(503)), max_retries=0)
    assert key not in repr(model) and "key=***" in repr(model)
    assert key not in describe(model)
    with pytest.raises(ProviderError) as info:
        model.complete(MESSAGES)
    request_lines = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert request_lines and all(key not in line for line in request_lines)
    assert "key=***" in request_lines[0]
    assert key not in str(info.value) and key not in caplog.text
    assert model.last_attempts[0].path == "/v1/chat/completions?key=***"


def test_a_key_too_short_to_search_for_is_still_masked_in_httpx_logs_by_its_query_parameter(caplog):
    """Below MIN_SECRET_LENGTH a key is not searched for as text, but `?key=` is masked by shape everywhere
    (as in repr and the attempt log): also in httpx's own log line, inside a call that has no other secret."""
    caplog.set_level(logging.DEBUG)
    model = HTTPModel("m", base_url="http://x/v1?key=abc", api_key="",
                      transport=httpx.MockTransport(lambda r: httpx.Response(503)), max_retries=0)
    with pytest.raises(ProviderError):
        model.complete(MESSAGES)
    request_lines = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert request_lines and all("key=abc" not in line for line in request_lines)
    assert "key=***" in request_lines[0]


def test_the_key_in_the_base_url_still_reaches_the_server():
    key = planted("D" * 20)
    seen = []

    def handler(request):
        seen.append(request)
        return httpx.Response(401)

    model = HTTPModel("gemini-x", "gemini", base_url=f"http://x/v1beta?key={key}", api_key="",
                      transport=httpx.MockTransport(handler))
    with pytest.raises(AuthenticationError):
        model.complete(MESSAGES, options=ModelOptions(stream=True))
    url = seen[0].url
    assert url.params["key"] == key and url.params["alt"] == "sse"
    assert url.path == "/v1beta/models/gemini-x:streamGenerateContent"


def test_a_run_that_fails_on_a_401_echo_leaks_nothing_into_the_run_or_its_trace():
    key = planted("E" * 20)

    def handler(request):
        return httpx.Response(401, json={"error": {"message": f"bad key {request.headers['authorization']}",
                                                   "type": "invalid_request_error"}})

    model = HTTPModel("m", base_url="http://x/v1", api_key=key, transport=httpx.MockTransport(handler))
    with pytest.raises(ModelCallError) as info:
        agentkit.run(model, "hi")
    run = info.value.run
    texts = [str(info.value), repr(info.value), "".join(traceback.format_exception(info.value)), repr(run),
             run.trace.to_json()]
    assert all(key not in text for text in texts)


def test_a_header_httpx_refuses_is_a_bad_request_not_a_retried_dropped_connection():
    key = planted("G" * 20)
    calls = []

    def handler(request):
        calls.append(request)
        raise httpx.LocalProtocolError(f"Illegal header value b'{key}\\n'")

    model = HTTPModel("m", base_url="http://x/v1", api_key=key, transport=httpx.MockTransport(handler))
    with pytest.raises(BadRequestError) as info:
        model.complete(MESSAGES)
    assert len(calls) == 1 and not info.value.retryable
    assert key not in "".join(traceback.format_exception(info.value))


def test_a_header_value_with_a_newline_is_refused_when_built():
    with pytest.raises(ValueError, match="X-Debug") as info:
        HTTPModel("m", base_url="http://x/v1", headers={"X-Debug": "a\nb"})
    assert "a\nb" not in str(info.value)


# -- the helpers, by hand ----------------------------------------------------------------------------------

def test_clean_key_and_key_problem():
    assert clean_key("  abc\n") == "abc" and clean_key("\n") is None and clean_key(None) is None
    assert key_problem("abc-DEF_123.x/y+z=") is None
    assert "position 3" in key_problem("abc\u201d")
    with pytest.raises(TypeError):
        clean_key(b"bytes")


def test_redact_finds_escaped_and_encoded_forms():
    secret = planted("F" * 8) + "/\"'"
    for text in [f"Illegal header value b'{secret}\\n'", json.dumps({"k": secret}), quote(secret, safe=""),
                 repr(secret)]:
        assert secret.strip("/\"'") not in redact(text, [secret]), text
    assert redact("GET /m?key=AIza123&alt=sse", ["nothing"]) == "GET /m?key=***&alt=sse"
    assert redact("Authorization: Bearer sk-abc.def", []) == "Authorization: Bearer ***"
    assert len(secret_forms([secret])) > 1


def test_redact_json_cuts_hostile_nesting():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    out = redact_json({"x": deep, "k": "a s3cret-value"}, ["s3cret-value"])
    assert out["k"] == "a ***" and "left out" in json.dumps(out)


def test_a_value_too_short_to_be_a_key_leaves_ordinary_words_alone():
    """No provider issues an 8-character credential; scrubbing a one-letter test key garbled every word."""
    assert redact("the chunk was cut", ["k"]) == "the chunk was cut"
    assert redact("send Bearer tokens here; Bearer sk-abcdef012", []) == "send Bearer tokens here; Bearer ***"


def test_which_values_count_as_secrets():
    assert url_secrets("https://h/v1?key=abc&alt=sse&api-version=2024") == ["abc"]
    assert header_secrets({"Authorization": "Bearer tok123", "X-Title": "agentkit"}) == ["Bearer tok123", "tok123"]
