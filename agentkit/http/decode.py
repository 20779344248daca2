"""Decode, in HTTPModel's recipe: a 2xx answer becomes a ModelTurn through the codec.

    decoder = Decoder(codec, errors)               # errors: the model's Classifier (`agentkit.http.classify`)
    turn = decoder.turn(b'{"id": ...}', request)   # one response's bytes: JSON, then codec.parse_response
    stream = decoder.stream(request)               # a stream: codec.StreamAssembler fed event by event
    pieces = stream.feed(event); turn = stream.turn()   # pieces: the text and argument deltas it brought

An error status is classify's (`Classifier.status_error`); a body that is not JSON, is nested too deep, or
does not fit the format becomes a BadResponseError, built by the Classifier like every other error.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import BadResponseError
from ..core.types import ModelTurn, StreamDelta
from ..providers.common import SSEvent
from .classify import Classifier
from .request import AttemptRequest

__all__ = ["Decoder", "StreamDecoding"]


class Decoder:
    """A 2xx body, whole or as a stream of events, as a ModelTurn; failures typed by `errors`."""

    def __init__(self, codec: Any, errors: Classifier):
        self.codec, self.errors = codec, errors

    def turn(self, content: bytes, request: AttemptRequest, status: int = 200) -> ModelTurn:
        """One response body (its bytes) as a ModelTurn."""
        try:
            body = json.loads(content)
        except RecursionError:
            raise self.errors.error(BadResponseError, "the response body is JSON nested too deep to read", request,
                                    status=status, error_type="too_deep") from None
        except ValueError as exc:
            where = f" at char {exc.pos} of {len(content)}" if isinstance(exc, json.JSONDecodeError) else ""
            reason = (exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)) + where
            raise self.errors.error(BadResponseError, f"the response body is not valid JSON ({reason})", request,
                                    status=status, error_type="invalid_json") from None
        with self.errors.decoding(request):
            return self.codec.parse_response(body)

    def stream(self, request: AttemptRequest) -> StreamDecoding:
        """A new StreamDecoding for one streamed attempt."""
        return StreamDecoding(self.codec.StreamAssembler(), self.errors, request)


class StreamDecoding:
    """One stream being decoded: the codec's StreamAssembler fed event by event, its failures typed."""

    def __init__(self, assembler: Any, errors: Classifier, request: AttemptRequest):
        self.assembler, self.errors, self.request = assembler, errors, request

    def feed(self, event: SSEvent) -> list[StreamDelta] | None:
        """Feed one event; the pieces it brought (None from a codec whose assembler reports none)."""
        with self.errors.decoding(self.request):
            return self.assembler.feed(event.event, event.data)

    def turn(self) -> ModelTurn:
        with self.errors.decoding(self.request):
            return self.assembler.turn()
