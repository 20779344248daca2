"""Reading an NDJSON stream (Ollama's framing) with plain httpx and a codec's StreamAssembler.

HTTPModel frames a stream by the codec's STREAM_FRAMING once the transport work lands; until then it
reads SSE only. `LineModel` is the few lines that do the NDJSON part meanwhile, so the loop can be
driven over a streamed Ollama answer: build the request with the codec, POST it, feed every non-empty
line to the assembler, exactly as the contract says HTTPModel will (`feed(None, line)`).
"""

from __future__ import annotations

import inspect

import httpx

from agentkit.providers import get_codec
from agentkit.types import ModelOptions, ModelTurn


def httpmodel_reads_ndjson() -> bool:
    """True once HTTPModel frames streams by the codec's STREAM_FRAMING (it then streams Ollama too)."""
    import agentkit.http

    return "STREAM_FRAMING" in inspect.getsource(agentkit.http)


def read_lines(response: httpx.Response, fmt: str) -> ModelTurn:
    """A streamed response's NDJSON lines through the codec's assembler."""
    assembler = get_codec(fmt).StreamAssembler()
    for line in response.iter_lines():
        if line.strip():
            assembler.feed(None, line)
    return assembler.turn()


class LineModel:
    """A model (complete(messages, tools, options) -> ModelTurn) that reads streams line by line."""

    def __init__(self, model: str, fmt: str, base_url: str):
        self.model, self.format, self.codec = model, fmt, get_codec(fmt)
        self.client = httpx.Client(base_url=base_url, timeout=10)

    def complete(self, messages, tools=(), options: ModelOptions | None = None) -> ModelTurn:
        options = options or ModelOptions()
        wire = self.codec.build_request(self.model, list(messages), list(tools), options)
        if not wire.stream:
            response = self.client.post(wire.path, json=wire.body, headers=wire.headers)
            response.raise_for_status()
            return self.codec.parse_response(response.json())
        with self.client.stream("POST", wire.path, json=wire.body, headers=wire.headers) as response:
            response.raise_for_status()
            return read_lines(response, self.format)

    def close(self) -> None:
        self.client.close()
