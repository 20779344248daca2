"""Record and replay: no key in the cassette, and a replayed run scores exactly as the recorded one."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter

import pytest

from agentkit.bench import bfcl
from agentkit.bench.oracle import serve_with_oracle
from agentkit.bench.record import NoRecording, recording, replaying
from agentkit.bench.runner import BenchAborted, read_records, run_benchmark
from agentkit.bench.suites import load_cases
from agentkit.http import HTTPModel


def planted_key() -> str:
    return "sk-" + "plant" + secrets.token_hex(20)  # built at run time: no key-shaped literal in the repo


def scores(path) -> Counter:
    return Counter((r["case"], r["ok"], r["label"]) for r in read_records(path))


@pytest.fixture(scope="module")
def cases():
    bfcl.fetch()
    return load_cases("bfcl:simple_python,bfcl:parallel,agentkit:error_recovery,agentkit:limits", limit=4)


@pytest.mark.parametrize("fmt, stream", [("openai-chat", True), ("anthropic", True), ("gemini", False)])
def test_a_replayed_run_reproduces_the_recorded_scores_and_the_key_is_never_stored(cases, fmt, stream, tmp_path,
                                                                                   monkeypatch):
    key = planted_key()
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)  # keys from the environment are scrubbed too
    cassette = tmp_path / "run.yaml"
    with serve_with_oracle(cases) as server:
        url = server.base_url(fmt)
        model = HTTPModel("sim-noisy-3", fmt, base_url=url, api_key=key)
        with recording(cassette, secrets=[key]):
            recorded = asyncio.run(run_benchmark(cases, model, out=tmp_path / "recorded.jsonl", trials=2,
                                                 concurrency=4, stream=stream, progress=False))
    text = cassette.read_text(encoding="utf-8")
    assert text.count(key) == 0 and text.count(key[3:15]) == 0
    assert "interactions" in text and recorded.done == 2 * len(cases)

    # The server is gone: every answer now comes from the cassette, under another key.
    offline = HTTPModel("sim-noisy-3", fmt, base_url=url, api_key="another-key")
    with replaying(cassette):
        replayed = asyncio.run(run_benchmark(cases, offline, out=tmp_path / "replayed.jsonl", trials=2,
                                             concurrency=4, stream=stream, progress=False, replayed=True))
    assert replayed.done == recorded.done and replayed.passed == recorded.passed
    assert scores(tmp_path / "replayed.jsonl") == scores(tmp_path / "recorded.jsonl")
    assert 0 < recorded.passed < recorded.done  # a mix of passes and failures, so the equality means something


def record_a_prompt_holding(key: str, tmp_path, secrets=()) -> str:
    """Record one case whose prompt contains `key` (sent with `key` as the API key); the cassette's text."""
    from agentkit import sim
    from agentkit.bench.scenarios import load
    from agentkit.bench.suites import Case

    scenario = load("limits")[5]
    case = Case(scenario.id, "agentkit", "limits", type(scenario)(**{**scenario.__dict__,
                                                                   "prompt": f"My key is {key}. 12 x 12?"}))
    with sim.serve() as server, recording(tmp_path / "c.yaml", secrets=secrets):
        model = HTTPModel("sim-reasoner", base_url=server.base_url("openai-chat"), api_key=key)
        asyncio.run(run_benchmark([case], model, out=tmp_path / "r.jsonl", progress=False))
    return (tmp_path / "c.yaml").read_text(encoding="utf-8")


def test_a_key_inside_a_body_is_scrubbed_before_it_is_written(tmp_path):
    key = planted_key()
    text = record_a_prompt_holding(key, tmp_path, secrets=[key])
    assert key not in text and "<redacted>" in text


@pytest.mark.parametrize("variable", ["OLLAMA_API_KEY", "GOOGLE_API_KEY"])
def test_every_provider_key_variable_is_scrubbed_without_being_passed(variable, tmp_path, monkeypatch):
    key = planted_key()
    monkeypatch.setenv(variable, key)
    text = record_a_prompt_holding(key, tmp_path)
    assert key not in text and "<redacted>" in text


def test_replaying_without_a_recording_or_with_a_different_run_fails_clearly(cases, tmp_path):
    with pytest.raises(NoRecording, match="record one first"):
        with replaying(tmp_path / "missing.yaml"):
            pass
    cassette = tmp_path / "small.yaml"
    with serve_with_oracle(cases) as server:
        url = server.base_url("openai-chat")
        with recording(cassette):
            asyncio.run(run_benchmark(cases[:2], HTTPModel("oracle", base_url=url, api_key="k"),
                                      out=tmp_path / "a.jsonl", progress=False))
    with replaying(cassette), pytest.raises(BenchAborted, match="no answer for a request"):
        asyncio.run(run_benchmark(cases[:4], HTTPModel("oracle", base_url=url, api_key="k", max_retries=0),
                                  out=tmp_path / "b.jsonl", progress=False, concurrency=1))


@pytest.mark.parametrize("header", ["helicone-auth", "x-portkey-api-key", "cf-aig-authorization", "x-my-gateway-token"])
def test_a_gateway_key_sent_only_in_a_header_never_reaches_the_cassette(header, tmp_path):
    key = planted_key()
    cassette = tmp_path / "gateway.yaml"
    chosen = load_cases("agentkit:limits", limit=1)
    with serve_with_oracle(chosen) as server:
        model = HTTPModel("oracle", "openai-chat", base_url=server.base_url("openai-chat"), api_key="sim",
                          headers={header: f"Bearer {key}"})
        with recording(cassette):
            asyncio.run(run_benchmark(chosen, model, out=tmp_path / "r.jsonl", progress=False))
    text = cassette.read_text(encoding="utf-8")
    assert "interactions" in text and key not in text and key[3:15] not in text and header not in text.lower()
