"""HTTPModel: a model that answers over real HTTP, httpx plus one provider codec (the recipe: `model.py`).

Its parts, each owning its state and tested alone, in the order a call meets them:

    model.py        HTTPModel: settings, the verbs, the driving loop (build, send, classify, retry, decode)
    environment.py  which provider, model, base URL and key the environment names
    request.py      AttemptRequest: one attempt, as build makes it
    retry_state.py  RetryState: one call's plan, budget and attempts, and what to do after each
    retries.py      RetryPlan, backoff_delay, moves_to_fallback; Attempt, the record of one try
    deadlines.py    AttemptClock and bounded transports: every socket read ends by the deadline
    clients.py      Clients: the httpx clients, made on first use, reused, closed
    send.py         Sender: one attempt over httpx, sync or async, whole or event by event
    classify.py     Classifier: whatever went wrong, as one scrubbed ProviderError
    decode.py       Decoder: a 2xx body or a stream of events, as a ModelTurn
    stored.py       StoredConversations: which stored response a new request may continue from
    redaction.py    keys checked once, then scrubbed from every message, body and log line
"""

from ..providers.common import retry_after_seconds
from .environment import PROVIDER_ALIASES, configured_format, configured_model
from .model import HTTPModel, TurnStream

__all__ = ["HTTPModel", "TurnStream", "PROVIDER_ALIASES", "configured_format", "configured_model",
           "retry_after_seconds"]
