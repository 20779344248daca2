"""What HTTPModel reads from the environment: which provider, which model, which base URL, which key.

    configured_format()                  # "anthropic" with AGENTKIT_PROVIDER=claude; None: none named
    configured_model("anthropic")        # AGENTKIT_MODEL, else the codec's DEFAULT_MODEL
    base_url(None, "https://api.openai.com/v1")   # AGENTKIT_BASE_URL, else the provider's own
    read_key(None, ("OPENAI_API_KEY",))  # the key from the first variable that holds one, checked

A provider key alone switches nothing: only AGENTKIT_PROVIDER or AGENTKIT_BASE_URL name a provider, so a
key left in a shell never turns a test run or a tutorial into a paid run.

Left out on purpose: configuration files and `.env` files (set the variables in your shell, or pass the
values as arguments).
"""

from __future__ import annotations

import os

from ..core.errors import AuthenticationError
from ..providers import FORMATS, get_codec
from .redaction import clean_key, key_problem

__all__ = ["PROVIDER_ALIASES", "base_url", "configured_format", "configured_model", "read_key"]

#: AGENTKIT_PROVIDER accepts the format names and these friendlier words.
PROVIDER_ALIASES = {"openai": "openai-chat", "responses": "openai-responses", "claude": "anthropic",
                    "google": "gemini"}


def configured_format(default_format: str = "openai-chat") -> str | None:
    """The wire format the environment asks for, or None when it names no provider.

    AGENTKIT_PROVIDER names a format, or "sim" for none even when other variables are set (the kit's
    callers then use the simulator); a typo is an error, never a quiet fall-back. Without it,
    AGENTKIT_BASE_URL means `default_format` at that URL.
    """
    provider = os.environ.get("AGENTKIT_PROVIDER", "").strip().lower()
    provider = PROVIDER_ALIASES.get(provider, provider)
    if provider == "sim":
        return None
    if provider:
        if provider not in FORMATS:
            raise ValueError(f"AGENTKIT_PROVIDER={provider!r}: choose 'sim' or one of {sorted(FORMATS)}")
        return provider
    return default_format if os.environ.get("AGENTKIT_BASE_URL", "").strip() else None


def configured_model(format: str) -> str:
    """AGENTKIT_MODEL, else the format's default model; with AGENTKIT_BASE_URL the model must be named.

    A server at your own URL (Ollama, vLLM, llama.cpp) serves only the models installed there and would
    answer the default name with a 404 at the first request: this says so before any request is made.
    """
    name = os.environ.get("AGENTKIT_MODEL", "").strip()
    if not name and os.environ.get("AGENTKIT_BASE_URL", "").strip():
        raise ValueError("AGENTKIT_BASE_URL is set but AGENTKIT_MODEL is not: name a model that server has "
                         "(for Ollama, one that `ollama list` shows, e.g. AGENTKIT_MODEL=qwen3); in JupyterLab, "
                         "restart it so that its kernels see the variable")
    return name or get_codec(format).DEFAULT_MODEL


def base_url(given: str | None, default: str) -> str:
    """The base URL: `given`, else AGENTKIT_BASE_URL, else the provider's own (`default`), without a final /."""
    return (given or os.environ.get("AGENTKIT_BASE_URL") or default).rstrip("/")


def read_key(api_key: str | None, key_envs: tuple[str, ...], *, provider: str | None = None,
             model: str | None = None) -> str | None:
    """The key: `api_key` if given, else the first of `key_envs` that holds one; stripped, checked, or None.

    A key with whitespace, a control or a non-ASCII character inside raises AuthenticationError naming
    where it came from (`provider` and `model` go on the error) — never the key.
    """
    if api_key is not None:
        key, source = clean_key(api_key), "api_key"
    else:
        key, source = None, ""
        for name in key_envs:
            key, source = clean_key(os.environ.get(name)), name
            if key:
                break
    problem = key_problem(key) if key else None
    if problem:
        raise AuthenticationError(f"the API key in {source} {problem}. The key itself is not shown.",
                                  error_type="malformed_key", provider=provider, model=model)
    return key
