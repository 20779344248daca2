"""Record a run's HTTP exchanges, and replay them offline with identical scores — via vcrpy.

    with recording("runs/gpt-4.1.yaml", secrets=[api_key]):
        await run_benchmark(cases, model, ...)          # real calls, each stored in the cassette
    with replaying("runs/gpt-4.1.yaml"):
        await run_benchmark(cases, model, ...)          # no network: every answer comes from the file

Why vcrpy: it patches httpx's transports (what HTTPModel uses), stores whole exchanges, filters
headers and query parameters, and lets us scrub bodies before anything is written. It carries
streamed (SSE) answers faithfully enough to score them: vcrpy reads the whole stream while recording
and replays the same bytes, so every event arrives in order and the assembled turn is identical —
only the timing between events is lost, which no score depends on (replayed latencies are not real
latencies, and the report says a run was replayed).

Requests are matched on method, path, query and the body's exact bytes — not host or port — so a
recording made against a simulator on one port replays on another, and identical requests (the same
case in several trials) are answered in the order they were recorded.

Secrets never reach the file: every header whose name says it carries a secret is dropped — the
providers' own (`FILTERED_HEADERS`) and any other whose name holds auth, key, token, secret, signature or
cookie (`agentkit.http.redaction.SECRET_HEADER`: a gateway's `helicone-auth`, `x-portkey-api-key`,
`cf-aig-authorization` ...) — and `key` in a query string; the values of those headers, any secret you
pass and the values of the provider key variables in the environment (every codec's API_KEY_ENVS) are
replaced by "<redacted>" wherever else they appear, in URLs, headers or bodies, as is or escaped
(`agentkit.http.redaction.secret_forms`), before the cassette is written.

A cassette cut short (a run killed while it wrote) or edited by hand is checked before replaying, and
before recording onto it (a recording adds to the cassette it finds): `BadRecording` says in one line
what is wrong and where (not YAML at line N, interaction 3 has no response status ...), instead of an
error deep inside vcrpy in the middle of a run.

Left out on purpose: editing cassettes, and matching requests loosely (a changed prompt is a
different benchmark, so it must not be answered from a recording).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from ..http.redaction import SECRET_HEADER, secret_forms
from ..providers import FORMATS, get_codec

FILTERED_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key", "openai-organization",
                    "openai-project", "cookie", "set-cookie")
#: Every provider's key variables, as its codec names them (API_KEY_ENVS): a new format is covered by itself.
KEY_VARIABLES = tuple(dict.fromkeys(v for fmt in FORMATS for v in get_codec(fmt).API_KEY_ENVS))
MATCH_ON = ("method", "path", "query", "same_body")
REDACTED = "<redacted>"


class NoRecording(FileNotFoundError):
    """--replay names a cassette that does not exist."""


class BadRecording(ValueError):
    """--replay names a cassette that is cut short, edited by hand, or not a cassette: the message says where."""


def _secrets(extra: Iterable[str | None]) -> tuple[str, ...]:
    """Every form a secret can take in text (as is, JSON-escaped, percent-encoded ...), longest first, for the
    secrets given and the provider keys in the environment; short strings are skipped (they would wreck text)."""
    return secret_forms([*extra, *(os.environ.get(v) for v in KEY_VARIABLES)])


def _scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, bytes):
        for secret in secrets:
            value = value.replace(secret.encode(), REDACTED.encode())
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    return value


def secret_header(name: str) -> bool:
    """Does a header of this name carry a secret (so it is never written to a cassette)?"""
    return name.lower() in FILTERED_HEADERS or bool(SECRET_HEADER.search(name))


def _vcr(secrets: tuple[str, ...]) -> Any:
    from ..extras import need

    vcr = need("vcr", "bench", "recording and replaying HTTP (--record / --replay)")
    found: set[str] = set()  # values of secret headers seen: scrubbed wherever else they show up

    def every_secret() -> tuple[str, ...]:
        return tuple(sorted({*secrets, *secret_forms(found)}, key=len, reverse=True))

    def request_hook(request: Any) -> Any:
        for name in list(request.headers):
            if secret_header(name):
                found.update(v for v in _values(request.headers[name]) if v)
                del request.headers[name]
        hidden = every_secret()
        request.uri = _scrub(request.uri, hidden)
        request.body = _scrub(request.body, hidden)
        for name in list(request.headers):
            request.headers[name] = _scrub(request.headers[name], hidden)
        return request

    def response_hook(response: dict) -> dict:
        headers = {name: values for name, values in (response.get("headers") or {}).items()
                   if not secret_header(name)}
        response["headers"] = _scrub(headers, every_secret())
        secrets_now = every_secret()
        body = response.get("body", {})
        if "string" in body:
            body["string"] = _scrub(body["string"], secrets_now)
        return response

    recorder = vcr.VCR(match_on=MATCH_ON, filter_headers=list(FILTERED_HEADERS), filter_query_parameters=["key"],
                       before_record_request=request_hook, before_record_response=response_hook,
                       decode_compressed_response=True)
    # Byte equality: our request bodies are deterministic, and vcrpy's own body matcher parses and
    # diffs every stored body for every request (quadratic, and seconds on a few hundred exchanges).
    recorder.register_matcher("same_body", lambda r1, r2: r1.body == r2.body)
    return recorder


def _values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


@contextmanager
def recording(path: str | os.PathLike, secrets: Iterable[str | None] = ()) -> Iterator[Any]:
    """Every httpx exchange inside the block goes to the network and into the cassette at `path`.

    An existing cassette is kept and added to (a resumed run adds what it records), once it is checked:
    one cut short or edited by hand is BadRecording, in one line, before anything is sent."""
    if Path(path).is_file() and Path(path).stat().st_size:
        check_cassette(path, again="move it away (or delete it), then record again")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with _vcr(_secrets(secrets)).use_cassette(str(path), record_mode="all") as cassette:
        yield cassette


@contextmanager
def replaying(path: str | os.PathLike) -> Iterator[Any]:
    """Every httpx exchange inside the block is answered from the cassette; none reaches the network."""
    if not Path(path).is_file():
        raise NoRecording(f"no recording at {path}: record one first with --record {path}")
    check_cassette(path)
    with ExitStack() as stack:
        try:
            cassette = stack.enter_context(_vcr(()).use_cassette(str(path), record_mode="none"))
        except Exception as exc:  # noqa: BLE001 - whatever vcrpy trips over in a file that passed our checks
            raise BadRecording(f"{path} cannot be replayed ({type(exc).__name__}: {exc}); "
                               "record it again") from None
        yield cassette


def check_cassette(path: str | os.PathLike, again: str = "record it again with --record") -> None:
    """Raise BadRecording naming the first thing in the cassette at `path` that vcrpy could not replay;
    `again` is what the message tells the user to do."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadRecording(f"{path} is not UTF-8 text (byte {exc.start}): not a cassette; {again}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise BadRecording(f"{path} is not valid YAML{where} ({problem}): cut short or edited? {again}") from None
    except RecursionError:
        raise BadRecording(f"{path} is nested too deep to be a cassette; {again}") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise BadRecording(f"{path} has no list of interactions: not a cassette, or cut short; {again}")
    for number, item in enumerate(data["interactions"], start=1):
        problem = _interaction_problem(item)
        if problem:
            raise BadRecording(f"{path}: interaction {number} {problem}: cut short or edited? {again}")


_TEXT = (str, bytes)


def _interaction_problem(item: Any) -> str | None:
    """What makes one stored exchange unplayable, in words; None when vcrpy can replay it."""
    if not isinstance(item, dict):
        return "is not a mapping"
    request, response = item.get("request"), item.get("response")
    if not isinstance(request, dict):
        return "has no request"
    for name in ("method", "uri"):
        if not isinstance(request.get(name), str):
            return f"has no request {name}"
    if not isinstance(request.get("body"), (*_TEXT, type(None))):
        return "has a request body that is not text"
    if not _headers_ok(request.get("headers")):
        return "has request headers that are not name: [values]"
    if not isinstance(response, dict):
        return "has no response"
    status = response.get("status")
    if not isinstance(status, dict) or type(status.get("code")) is not int or not 100 <= status["code"] <= 599:
        return "has no response status code (100-599)"
    if not isinstance(status.get("message"), (str, type(None))):
        return "has a response status message that is not text"
    if isinstance(status.get("message"), str) and not status["message"].isascii():
        return "has a response status message that is not ASCII"
    if not _headers_ok(response.get("headers")):
        return "has response headers that are not name: [values]"
    body = response.get("body")
    if not isinstance(body, dict) or not isinstance(body.get("string"), _TEXT):
        return "has no response body string"
    return None


def _headers_ok(headers: Any) -> bool:
    return isinstance(headers, dict) and all(
        isinstance(name, str) and isinstance(values, list) and all(isinstance(v, str) for v in values)
        for name, values in headers.items())
