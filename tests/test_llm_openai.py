"""The openai backend against a real HTTP server on loopback (tests/openai_stub_server.py)."""

from __future__ import annotations

import json
import logging

import pytest
from openai_stub_server import StubServer

from structablate.llm.backends import BackendError, OpenAIBackend
from structablate.llm.client import client_from_config

KEY_ENV = "STRUCTABLATE_TEST_OPENAI_KEY"
SECRET = "sk-test-secret-do-not-log"


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def config(srv: StubServer, tmp_path, **openai):
    return {
        "model": "stub-model",
        "backend": "openai",
        "cache": str(tmp_path / "generations"),
        "openai": {"base_url": srv.base_url, "api_key_env": KEY_ENV, "backoff_s": 0.01,
                   **openai},
    }


def test_chat_roundtrip_payload_and_cache(tmp_path, key):
    with StubServer(api_key=key) as srv:
        client = client_from_config(config(srv, tmp_path), base_dir=tmp_path)
        schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
        out = client.chat([{"role": "user", "content": "one two three"}], json_schema=schema,
                          max_tokens=33)
        assert out == "three two one"
        assert client.chat([{"role": "user", "content": "one two three"}], json_schema=schema,
                           max_tokens=33) == out
        assert len(srv.requests) == 1  # the second call was a cache hit
        body = srv.requests[0]
        assert body["model"] == "stub-model"
        assert body["temperature"] == 0.0 and body["seed"] == 20260710
        assert body["max_tokens"] == 33
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == schema
        assert srv.headers[0]["Authorization"] == f"Bearer {key}"
        assert client.stats.completion_tokens == 3


def test_api_key_only_from_env_and_never_shown(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(BackendError, match=KEY_ENV):
        OpenAIBackend("m", "http://127.0.0.1:9/v1", api_key_env=KEY_ENV)
    monkeypatch.setenv(KEY_ENV, SECRET)
    with StubServer(api_key=SECRET, fail_first=2) as srv, caplog.at_level(logging.DEBUG):
        backend = OpenAIBackend("m", srv.base_url, api_key_env=KEY_ENV, backoff_s=0.01)
        assert SECRET not in repr(backend)
        client = client_from_config(config(srv, tmp_path))
        client.chat([{"role": "user", "content": "hi"}])
        client.close()  # commits the cache
    assert SECRET not in caplog.text
    assert "retry" in caplog.text
    stored = b"".join(p.read_bytes() for p in (tmp_path / "generations").rglob("*")
                      if p.is_file())
    assert b"hi" in stored and SECRET not in stored.decode("latin-1")


def test_wrong_key_is_not_retried(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "wrong")
    with StubServer(api_key=SECRET) as srv:
        client = client_from_config(config(srv, tmp_path))
        with pytest.raises(BackendError, match="HTTP 401"):
            client.chat([{"role": "user", "content": "hi"}])
        assert len(srv.requests) == 1


def test_retries_with_exponential_backoff_and_retry_after(key):
    sleeps: list[float] = []
    with StubServer(api_key=key, fail_first=3, fail_status=503) as srv:
        b = OpenAIBackend("m", srv.base_url, api_key_env=KEY_ENV, backoff_s=0.5,
                          max_backoff_s=1.5, sleep=sleeps.append)
        from structablate.llm.backends import Request
        g = b.generate(Request(messages=({"role": "user", "content": "a b"},)))
        assert g.text == "b a"
    assert sleeps == [0.5, 1.0, 1.5]  # 0.5 * 2**k, capped
    sleeps.clear()
    with StubServer(api_key=key, fail_first=1, fail_status=429, retry_after="0.25") as srv:
        b = OpenAIBackend("m", srv.base_url, api_key_env=KEY_ENV, sleep=sleeps.append)
        b.generate(Request(messages=({"role": "user", "content": "x"},)))
    assert sleeps == [0.25]
    with StubServer(api_key=key, fail_first=10) as srv:
        b = OpenAIBackend("m", srv.base_url, api_key_env=KEY_ENV, max_retries=2,
                          sleep=sleeps.append)
        with pytest.raises(BackendError, match="gave up after 3 attempts"):
            b.generate(Request(messages=({"role": "user", "content": "x"},)))
        assert len(srv.requests) == 3


def test_timeout_is_retried_then_fails(key):
    with StubServer(api_key=key, delay_s=0.5) as srv:
        b = OpenAIBackend("m", srv.base_url, api_key_env=KEY_ENV, timeout_s=0.1,
                          max_retries=1, sleep=lambda s: None)
        from structablate.llm.backends import Request
        with pytest.raises(BackendError, match="Timeout"):
            b.generate(Request(messages=({"role": "user", "content": "x"},)))


def test_concurrency_limit_and_order(tmp_path, key):
    with StubServer(api_key=key, delay_s=0.15, gather=2) as srv:  # overlap, not timing
        client = client_from_config(config(srv, tmp_path, concurrency=3))
        reqs = [client.request([{"role": "user", "content": f"w{i} q"}]) for i in range(9)]
        out = client.generate_many(reqs)
        assert out == [f"q w{i}" for i in range(9)]
        assert 1 < srv.max_in_flight <= 3
    # every answer was recorded as it arrived
    replay = client_from_config({"model": "stub-model", "mode": "replay",
                                 "cache": str(tmp_path / "generations")})
    assert replay.generate_many(reqs) == out


def test_response_format_options(key):
    from structablate.llm.backends import Request

    req = Request(messages=({"role": "user", "content": "x"},), json_schema={"type": "object"})
    b = OpenAIBackend("m", api_key_env=KEY_ENV, response_format="json_object")
    assert b.payload(req)["response_format"] == {"type": "json_object"}
    b = OpenAIBackend("m", api_key_env=None, response_format="none",
                      extra_body={"top_k": 1})
    body = b.payload(req)
    assert "response_format" not in body and body["top_k"] == 1
    json.dumps(body)
    with pytest.raises(ValueError):
        OpenAIBackend("m", api_key_env=None, response_format="grammar")
