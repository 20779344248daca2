"""HTTPModel: a model that answers over real HTTP, httpx plus one provider codec (see `model.py`)."""

from ..providers.common import retry_after_seconds
from .model import PROVIDER_ALIASES, HTTPModel, TurnStream, configured_format, configured_model

__all__ = ["HTTPModel", "TurnStream", "PROVIDER_ALIASES", "configured_format", "configured_model",
           "retry_after_seconds"]
