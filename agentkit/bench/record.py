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

Secrets never reach the file: the auth headers every provider uses are dropped (`FILTERED_HEADERS`,
and `key` in a query string), and any secret you pass — plus the values of the provider key
variables in the environment (every codec's API_KEY_ENVS) — is replaced by "<redacted>" wherever else
it appears, in URLs, headers or bodies, as is or escaped (`agentkit.redaction.secret_forms`), before
the cassette is written.

Left out on purpose: editing cassettes, and matching requests loosely (a changed prompt is a
different benchmark, so it must not be answered from a recording).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..providers import FORMATS, get_codec
from ..redaction import secret_forms

FILTERED_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key", "openai-organization",
                    "openai-project", "cookie", "set-cookie")
#: Every provider's key variables, as its codec names them (API_KEY_ENVS): a new format is covered by itself.
KEY_VARIABLES = tuple(dict.fromkeys(v for fmt in FORMATS for v in get_codec(fmt).API_KEY_ENVS))
MATCH_ON = ("method", "path", "query", "same_body")
REDACTED = "<redacted>"


class NoRecording(FileNotFoundError):
    """--replay names a cassette that does not exist."""


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


def _vcr(secrets: tuple[str, ...]) -> Any:
    from ..extras import need

    vcr = need("vcr", "bench", "recording and replaying HTTP (--record / --replay)")

    def request_hook(request: Any) -> Any:
        request.uri = _scrub(request.uri, secrets)
        request.body = _scrub(request.body, secrets)
        for name in list(request.headers):
            request.headers[name] = _scrub(request.headers[name], secrets)
        return request

    def response_hook(response: dict) -> dict:
        response["headers"] = _scrub(response.get("headers", {}), secrets)
        body = response.get("body", {})
        if "string" in body:
            body["string"] = _scrub(body["string"], secrets)
        return response

    recorder = vcr.VCR(match_on=MATCH_ON, filter_headers=list(FILTERED_HEADERS), filter_query_parameters=["key"],
                       before_record_request=request_hook, before_record_response=response_hook,
                       decode_compressed_response=True)
    # Byte equality: our request bodies are deterministic, and vcrpy's own body matcher parses and
    # diffs every stored body for every request (quadratic, and seconds on a few hundred exchanges).
    recorder.register_matcher("same_body", lambda r1, r2: r1.body == r2.body)
    return recorder


@contextmanager
def recording(path: str | os.PathLike, secrets: Iterable[str | None] = ()) -> Iterator[Any]:
    """Every httpx exchange inside the block goes to the network and into the cassette at `path`.

    An existing cassette is kept and added to (a resumed run adds what it records)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with _vcr(_secrets(secrets)).use_cassette(str(path), record_mode="all") as cassette:
        yield cassette


@contextmanager
def replaying(path: str | os.PathLike) -> Iterator[Any]:
    """Every httpx exchange inside the block is answered from the cassette; none reaches the network."""
    if not Path(path).is_file():
        raise NoRecording(f"no recording at {path}: record one first with --record {path}")
    with _vcr(()).use_cassette(str(path), record_mode="none") as cassette:
        yield cassette
