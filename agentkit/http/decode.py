"""Step 5 of HTTPModel's recipe, decode: a 2xx answer becomes a ModelTurn through the codec.

    turn = self._decode(response, request)     # one response: JSON, then codec.parse_response
    assembly = Assembly(self, request)         # a stream: codec.StreamAssembler fed event by event
    assembly.feed(event); turn = assembly.turn()

An error status is still step 3's (`_status_error`); a body that is not JSON, is nested too deep, or does
not fit the format becomes a BadResponseError, built by step 3's `_error` (`agentkit.http.classify`).

`DecodeStep` is a part of HTTPModel (one of its base classes), kept in a file of its own so the recipe in
`agentkit.http` reads one step at a time. It reads `codec` and step 3's methods of the model.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx

from ..core.errors import BadResponseError
from ..core.types import ModelTurn
from ..providers.common import SSEvent
from .classify import ClassifyStep

if TYPE_CHECKING:
    from .call import AttemptRequest


class DecodeStep(ClassifyStep):
    """Step 5: a 2xx response, whole, as a ModelTurn; failures typed by step 3 (a base of HTTPModel)."""

    codec: Any

    def _decode(self, response: httpx.Response, request: AttemptRequest) -> ModelTurn:
        status, content = response.status_code, response.content
        if not response.is_success:
            raise self._status_error(response, request)
        try:
            body = json.loads(content)
        except RecursionError:
            raise self._error(BadResponseError, "the response body is JSON nested too deep to read", request,
                              status=status, error_type="too_deep") from None
        except ValueError as exc:
            where = f" at char {exc.pos} of {len(content)}" if isinstance(exc, json.JSONDecodeError) else ""
            reason = (exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)) + where
            raise self._error(BadResponseError, f"the response body is not valid JSON ({reason})", request,
                              status=status, error_type="invalid_json") from None
        with self._decoding(request):
            return self.codec.parse_response(body)


class Assembly:
    """Step 5 for a stream: the codec's StreamAssembler fed event by event, its failures typed."""

    def __init__(self, owner: DecodeStep, request: AttemptRequest):
        self.owner, self.request = owner, request
        self.assembler = owner.codec.StreamAssembler()

    def feed(self, event: SSEvent) -> None:
        with self.owner._decoding(self.request):
            self.assembler.feed(event.event, event.data)

    def turn(self) -> ModelTurn:
        with self.owner._decoding(self.request):
            return self.assembler.turn()

