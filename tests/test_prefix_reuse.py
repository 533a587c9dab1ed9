"""A1 calls ordered for prefix reuse (issue 55, item 4): one document's calls back to back on one
model with the document before the chunk, one llama.cpp worker process per core each owning
whole documents, the same cache keys and contexts as in process, vLLM's server started with
automatic prefix caching, and the rendered prompts sharing their prefix token for token."""

from __future__ import annotations

import json
import os
import re

import pytest

from structablate.llm.backends import Backend, Generation, vllm_serve_command
from structablate.llm.cache import open_cache
from structablate.llm.client import LLMClient, client_from_config
from structablate.llm.contextualize import context_messages, contextualize_chunks
from structablate.settings import LLMSettings, one_process_per_core, parse
from structablate.tables import frame


def _docs_and_chunks(texts, per_doc=4):
    """Documents of ``texts`` and ``per_doc`` equal chunks each; the chunk rows of the
    documents are interleaved (the table's order need not group them)."""
    docs = frame("documents", {"doc_id": [f"d{i}" for i in range(len(texts))],
                               "corpus": ["c"] * len(texts), "title": ["T"] * len(texts),
                               "text": texts, "topic": [None] * len(texts)})
    rows: dict[str, list] = {k: [] for k in ("chunk_id", "doc_id", "start", "end")}
    for j in range(per_doc):
        for i, t in enumerate(texts):
            step = len(t) // per_doc
            rows["chunk_id"].append(f"A1:d{i}:{j}")
            rows["doc_id"].append(f"d{i}")
            rows["start"].append(j * step)
            rows["end"].append(len(t) if j == per_doc - 1 else (j + 1) * step)
    import polars as pl

    chunks = pl.DataFrame(rows).with_columns(
        pl.col("start").cast(pl.Int32), pl.col("end").cast(pl.Int32))
    return docs, chunks


class Tagging(Backend):
    """Answers with the chunk's head; ``finish_reason`` tags the worker's pid and its call
    count, so the cache shows which process generated each call and in which order."""

    name = "tagging"

    def __init__(self):
        self.calls = 0

    def generate(self, request):
        self.calls += 1
        content = request.messages[-1]["content"]
        chunk = re.search(r"<chunk>\n(.*?)\n</chunk>", content, re.S)[1]
        return Generation(text=f"ctx {chunk[:7]}", completion_tokens=3,
                          finish_reason=f"{os.getpid()}:{self.calls}")


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_worker_processes_own_whole_documents_with_the_same_keys_and_contexts(tmp_path):
    """Two worker processes: every document's calls run on one worker, back to back in
    chunk order, outside this process; the cache keys and contexts equal the in-process
    run's (the order of generation changes no key)."""
    texts = [" ".join(f"w{d}{i:03d}" for i in range(300)) for d in range(5)]
    docs, chunks = _docs_and_chunks(texts)

    def run(processes, name):
        path = tmp_path / f"{name}.jsonl"
        client = LLMClient("m", open_cache(path), backend_factory=Tagging,
                           backend_name="tagging", batch_size=3, processes=processes)
        out = contextualize_chunks(chunks, docs, client, lambda s: len(s.split()))
        client.close()
        return out, _records(path)

    pooled, recs = run(2, "pooled")
    inproc, recs1 = run(1, "inproc")
    assert pooled["prefix"].to_list() == inproc["prefix"].to_list()
    assert pooled["prefix"].to_list()[0] == "ctx w0000 w "
    assert sorted(r["key"] for r in recs) == sorted(r["key"] for r in recs1)
    assert len(recs) == 20
    by_doc: dict[str, list[tuple[int, int, int]]] = {}
    for r in recs:
        content = r["request"]["messages"][0]["content"]
        assert len(r["request"]["messages"]) == 1  # no system message of our own
        assert content.index("<document>") < content.index("<chunk>")  # document first
        pid, n = map(int, r["response"]["finish_reason"].split(":"))
        assert pid != os.getpid() and r["response"]["backend"] == "tagging"
        doc = re.search(r"<document>\nw(\d)", content)[1]
        chunk_at = texts[int(doc)].index(re.search(r"<chunk>\n(.*?)\n</chunk>", content,
                                                   re.S)[1])
        by_doc.setdefault(doc, []).append((pid, n, chunk_at))
    for calls in by_doc.values():
        calls.sort(key=lambda c: c[1])
        assert len({pid for pid, _, _ in calls}) == 1  # one worker owns the document
        ns = [n for _, n, _ in calls]
        assert ns == list(range(ns[0], ns[0] + len(ns)))  # its calls back to back
        assert [a for _, _, a in calls] == sorted(a for _, _, a in calls)  # in chunk order
    # a rerun replays every call from the cache and starts no worker
    client = LLMClient("m", open_cache(tmp_path / "pooled.jsonl"), backend_factory=None,
                       processes=2)
    again = contextualize_chunks(chunks, docs, client, lambda s: len(s.split()))
    assert client._pool is None and client.stats.hits == 20
    client.close()
    assert again["prefix"].to_list() == pooled["prefix"].to_list()


def test_one_process_per_core_layout():
    """llama.cpp in a job of N cores: N processes of one thread each, unless set; other
    backends untouched; the client takes the block's processes."""
    llm = parse(LLMSettings, {"backend": "llamacpp", "model": "m"}, "llm")
    laid = one_process_per_core(llm, 4)
    assert (laid.llamacpp.processes, laid.llamacpp.n_threads) == (4, 1)
    assert client_from_config(laid).processes == 4
    assert client_from_config(llm).processes == 1  # outside a job: in process
    own = parse(LLMSettings, {"backend": "llamacpp", "model": "m",
                              "llamacpp": {"n_threads": 2}}, "llm")
    assert one_process_per_core(own, 3).llamacpp.n_threads == 2
    fixed = parse(LLMSettings, {"backend": "llamacpp", "model": "m",
                                "llamacpp": {"processes": 1}}, "llm")
    assert one_process_per_core(fixed, 8) == fixed
    vllm = parse(LLMSettings, {"backend": "vllm", "model": "m"}, "llm")
    assert one_process_per_core(vllm, 8) == vllm
    assert client_from_config(vllm).processes == 1


def test_vllm_server_command_carries_prefix_caching():
    llm = parse(LLMSettings, {"backend": "openai", "model": "gemma", "vllm": {
        "model_path": "google/gemma-4-26b-a4b-it", "max_model_len": 32768,
        "engine_args": {"max_num_seqs": 64, "enforce_eager": True}}}, "llm")
    cmd = vllm_serve_command(llm, port=8001)
    assert cmd[:3] == ["vllm", "serve", "google/gemma-4-26b-a4b-it"]
    assert "--enable-prefix-caching" in cmd and "--no-enable-prefix-caching" not in cmd
    assert cmd[cmd.index("--served-model-name") + 1] == "gemma"
    assert cmd[cmd.index("--max-model-len") + 1] == "32768"
    assert cmd[cmd.index("--max-num-seqs") + 1] == "64" and "--enforce-eager" in cmd
    off = parse(LLMSettings, {"backend": "openai", "model": "gemma",
                              "vllm": {"enable_prefix_caching": False}}, "llm")
    assert "--no-enable-prefix-caching" in vllm_serve_command(off)


@pytest.mark.slow
def test_rendered_prompts_of_one_document_share_their_prefix_token_for_token(smollm2_gguf):
    """With the GGUF's own chat template (its default system prompt, identical in every call)
    two chunks of one document render to prompts whose tokens agree up to and including
    ``<chunk>\\n``: llama.cpp re-evaluates only the chunk and the instruction."""
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llm = llama_cpp.Llama(str(smollm2_gguf), vocab_only=True, verbose=False)
    fmt = Jinja2ChatFormatter(llm.metadata["tokenizer.chat_template"],
                              eos_token="<|im_end|>", bos_token="<|im_start|>")
    doc = "Results.\n\nThe 3.5 % gain (Table 2) holds\tfor   all  runs; see §4. " * 30
    prompts = [fmt(messages=context_messages(doc, c)).prompt
               for c in ("The 3.5 % gain (Table 2)", "holds for all runs")]
    toks = [llm.tokenize(p.encode(), add_bos=False, special=True) for p in prompts]
    head = prompts[0][: prompts[0].index("<chunk>\n") + len("<chunk>\n")]
    n_head = len(llm.tokenize(head.encode(), add_bos=False, special=True))
    assert prompts[0].startswith("<|im_start|>system\n")  # the template's own system prompt
    assert toks[0][:n_head] == toks[1][:n_head] and n_head > 600
