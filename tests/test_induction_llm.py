"""LLM structure induction: prompt, self-correction, repair, windows, report, replay, and a
real GGUF model end to end (llama-cpp-python; skipped when it is not installed)."""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import replace

import pytest
from conftest import SAMPLE

from structablate.corpus.flatten import DocumentBuilder
from structablate.corpus.verify import verify_sections
from structablate.llm.backends import Backend, Generation, Request
from structablate.llm.cache import open_cache
from structablate.llm.client import LLMClient, client_from_config
from structablate.settings import (
    ConfigError,
    InductionSettings,
    LLMSettings,
    context_tokens,
    parse,
    with_context_tokens,
)
from structablate.structure import induce_documents, make_inducer
from structablate.structure.induce import (
    LLMInducer,
    build_messages,
    correction_messages,
    count_truncated,
    listing_budget,
    para_caps,
    paragraph_listing,
    plan_windows,
    truncate_paragraph,
)
from structablate.structure.report import induction_report, span_identity
from structablate.structure.tiling import FIRST, LAST

CFG = InductionSettings(context_tokens=8192)
TITLED = InductionSettings(context_tokens=8192, show_title=True)


class Scripted(Backend):
    """Answers with ``fn(request, call_number)``; records every request."""

    name = "scripted"

    def __init__(self, fn):
        self.fn = fn
        self.requests: list[Request] = []

    def generate(self, request: Request) -> Generation:
        self.requests.append(request)
        return Generation(text=self.fn(request, len(self.requests)), completion_tokens=10,
                          seconds=0.001)


def make_doc(doc_id="d1", sizes=(2, 3, 3), title="A Study"):
    b = DocumentBuilder(doc_id, title)
    k = 0
    for s, size in enumerate(sizes):
        for _ in range(size):
            b.add_paragraph(f"Paragraph {k} of section {s}: " + "words " * 20, [f"Gold {s}"])
            k += 1
    return b.build()


def window_of(request: Request) -> tuple[int, int]:
    m = re.search(r"numbered (\d+) to (\d+)", request.messages[1]["content"])
    return int(m.group(1)), int(m.group(2)) + 1


def tiling_answer(lo, hi, step=2, level2=False):
    items = []
    for k, a in enumerate(range(lo, hi, step)):
        items.append({"title": f"Part {a}", "level": 2 if (level2 and k % 2) else 1,
                      FIRST: a, LAST: min(a + step, hi) - 1})
    return json.dumps({"sections": items})


def client_for(backend, tmp_path=None):
    cache = open_cache(tmp_path / "c.sqlite") if tmp_path else None
    return LLMClient("scripted-model", cache, backend=backend)


def test_valid_first_answer(tmp_path):
    d = make_doc()
    backend = Scripted(lambda r, n: tiling_answer(*window_of(r), level2=True))
    res = LLMInducer(client_for(backend, tmp_path), CFG).induce(d)
    assert res.status == "valid" and len(backend.requests) == 1
    assert [(s.para_start, s.para_end, s.level) for s in res.sections] == [
        (0, 2, 1), (2, 4, 2), (4, 6, 1), (6, 8, 2)]
    assert res.sections[1].path == ("Part 0", "Part 2")
    prompt = backend.requests[0].messages[1]["content"]
    # headings are stripped, paragraphs are numbered and whole, the title is not shown
    # (the paper's model sees the paragraphs only) unless show_title asks for it
    assert "Gold 0" not in prompt and "[7] Paragraph 7" in prompt and "A Study" not in prompt
    assert d.paragraph_text(7) in prompt and "…" not in prompt
    assert "Introduction" not in prompt  # no worked example for a small model to copy
    titled = Scripted(lambda r, n: tiling_answer(*window_of(r)))
    LLMInducer(client_for(titled), TITLED).induce(d)
    assert '"A Study"' in titled.requests[0].messages[1]["content"]
    assert backend.requests[0].json_schema["properties"]["sections"]["maxItems"] == 8
    assert backend.requests[0].sampling.temperature == 0.0


def test_one_self_correction_round_quotes_the_violations(tmp_path):
    d = make_doc()
    bad = json.dumps({"sections": [{"title": "A", "level": 1, FIRST: 0, LAST: 2},
                                   {"title": "B", "level": 3, FIRST: 5, LAST: 7}]})
    backend = Scripted(lambda r, n: bad if n == 1 else tiling_answer(0, 8, step=4))
    res = LLMInducer(client_for(backend, tmp_path), CFG).induce(d)
    assert res.status == "self_corrected"
    assert len(backend.requests) == 2
    second = backend.requests[1].messages
    assert second[2] == {"role": "assistant", "content": bad}
    assert "level jumps from 1 to 3" in second[3]["content"]
    assert "should start at 3 (gap)" in second[3]["content"]
    assert [(s.para_start, s.para_end) for s in res.sections] == [(0, 4), (4, 8)]
    assert res.violations  # the first round's violations are kept for the report


def test_still_invalid_after_correction_is_repaired_and_garbage_falls_back(tmp_path):
    d = make_doc()
    bad = json.dumps({"sections": [{"title": "A", "level": 1, FIRST: 0, LAST: 2},
                                   {"title": "B", "level": 3, FIRST: 5, LAST: 7}]})
    backend = Scripted(lambda r, n: bad)
    res = LLMInducer(client_for(backend), CFG).induce(d)
    assert res.status == "repaired" and len(backend.requests) == 2
    assert [(s.para_start, s.para_end, s.level) for s in res.sections] == [(0, 5, 1), (5, 8, 2)]
    garbage = LLMInducer(client_for(Scripted(lambda r, n: "I cannot do that.")), CFG).induce(d)
    assert garbage.status == "fallback"
    assert [(s.para_start, s.para_end, s.title) for s in garbage.sections] == [(0, 8, "A Study")]
    no_retry = LLMInducer(client_for(Scripted(lambda r, n: bad)),
                          InductionSettings(context_tokens=8192, self_correction=False))
    assert no_retry.induce(d).status == "repaired"


def test_long_documents_truncate_then_window(tmp_path):
    d = make_doc(sizes=(10, 10, 10))
    full = sum(len(d.paragraph_text(i)) for i in range(30))
    cap, windows = plan_windows(d, InductionSettings(max_prompt_chars=full // 2,
                                                   para_char_caps=(60, 30)))
    assert cap == 60 and windows == [(0, 30)]
    cfg = InductionSettings(max_prompt_chars=400, para_char_caps=(40,))
    cap, windows = plan_windows(d, cfg)
    assert cap == 40 and len(windows) > 1
    assert windows[0][0] == 0 and windows[-1][1] == 30
    assert all(a[1] == b[0] for a, b in zip(windows, windows[1:], strict=False))
    backend = Scripted(lambda r, n: tiling_answer(*window_of(r), step=3, level2=True))
    res = LLMInducer(client_for(backend), cfg).induce(d)
    assert res.n_windows == len(windows) and res.para_char_cap == 40
    assert len(backend.requests) == len(windows)
    starts = {s.para_start for s in res.sections}
    assert all(w[0] in starts for w in windows)  # window seams are section boundaries
    assert verify_sections(d.paragraphs, res.sections, check_level_steps=True) == []
    assert "…" in backend.requests[0].messages[1]["content"]
    assert truncate_paragraph("alpha beta gamma delta", 12) == "alpha beta …"


def test_report_and_replay(tmp_path):
    docs = [make_doc("a"), make_doc("b", sizes=(4, 4), title="Other")]
    answers = {"a": tiling_answer(0, 8, step=4), "b": "garbage"}

    def fn(r, n):
        return answers["b" if '"Other"' in r.messages[1]["content"] else "a"]

    llm_cfg = {"model": "scripted-model", "cache": "c.jsonl", "backend": "none"}
    client = client_from_config(llm_cfg, base_dir=tmp_path)
    client._backend = Scripted(fn)
    results = LLMInducer(client, TITLED).induce_many(docs)
    gold = {d.doc_id: d.sections for d in docs}
    rep = induction_report(results, gold, inducer="llm")
    assert rep["n_documents"] == 2 and rep["usable"] == 1 and rep["fallback"] == 1
    assert rep["mean_gold_sections_per_doc"] == 2.5
    assert rep["mean_sections_per_doc"] == 1.5
    # a: induced [0,4) [4,8) vs gold [0,2) [2,5) [5,8) -> 0 identical;
    # b: one fallback section vs two gold -> 0 identical
    assert rep["section_span_identity"] == 0.0
    assert span_identity(gold["b"], [(0, 10)]) == (0, 1)
    assert span_identity(gold["b"], [(gold["b"][0].start, gold["b"][0].end)]) == (1, 1)
    # the whole run replays from the cache without a backend
    pairs, rep2 = induce_documents(
        docs, {"inducer": "llm", "context_tokens": 8192, "show_title": True},
        {**llm_cfg, "mode": "replay"}, base_dir=tmp_path)
    assert [p[1] for p in pairs] == [r.sections for r in results]
    assert rep2["llm"]["generated"] == 0 and rep2["llm"]["cache_hits"] == 3
    assert rep2["inducer"] == "llm" and rep2["model"] == "scripted-model"


# ---------------------------------------------------------------------------- real model

def qasper_docs(n, max_paragraphs=None):
    """The first ``n`` papers (by id) of the bundled QASPER sample, as documents."""
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    out = []
    for pid in sorted(data)[:n]:
        p = data[pid]
        b = DocumentBuilder(pid, p["title"])
        paras = [(p["abstract"], ["Abstract"])]
        for s in p["full_text"]:
            path = [x.strip() or "Untitled" for x in (s["section_name"] or "").split(" ::: ")]
            paras += [(t, path) for t in s["paragraphs"]]
        for text, path in paras[:max_paragraphs]:
            b.add_paragraph(text, path)
        out.append(b.build())
    return out


@pytest.mark.slow
def test_real_gguf_model_end_to_end(tmp_path, smollm2_gguf):
    path = smollm2_gguf
    docs = qasper_docs(2, max_paragraphs=6)  # small, so a 2-core machine takes ~20 s
    llm_cfg = {"model": "smollm2-135m-instruct-q4_1", "backend": "llamacpp",
               "cache": str(tmp_path / "gen.jsonl"),
               "llamacpp": {"model_path": str(path), "n_ctx": 4096, "n_threads": 2}}
    ind_cfg = {"inducer": "llm", "max_prompt_chars": 3000, "para_char_caps": [200, 100],
               "max_tokens": 200}
    pairs, rep = induce_documents(docs, ind_cfg, llm_cfg)
    by_id = {d.doc_id: d for d in docs}
    for doc_id, sections in pairs:
        assert verify_sections(by_id[doc_id].paragraphs, sections, check_level_steps=True) == []
    assert rep["n_documents"] == 2 and rep["llm"]["generated"] >= 2
    assert rep["usable"] + rep["fallback"] == 2
    # rerun replays from disk: same sections, no generation
    pairs2, rep2 = induce_documents(docs, ind_cfg, {**llm_cfg, "mode": "replay"})
    assert pairs2 == pairs and rep2["llm"]["generated"] == 0


def test_request_order_batched_vs_llamacpp():
    docs = [make_doc("a", title="Alpha"), make_doc("b", title="Beta")]

    def run(backend_name):
        backend = Scripted(lambda r, n: "not json")
        client = LLMClient("m", None, backend=backend, backend_name=backend_name)
        LLMInducer(client, TITLED).induce_many(docs)
        return [("Alpha" if '"Alpha"' in r.messages[1]["content"] else "Beta", len(r.messages))
                for r in backend.requests]

    # batched backends: every first round, then every correction round
    assert run("vllm") == [("Alpha", 2), ("Beta", 2), ("Alpha", 4), ("Beta", 4)]
    # llama.cpp: a document's correction right after its first round (KV prefix reuse)
    assert run("llamacpp") == [("Alpha", 2), ("Alpha", 4), ("Beta", 2), ("Beta", 4)]


def test_context_overflow_falls_back_instead_of_crashing():
    from structablate.llm.backends import ContextOverflowError

    def fn(r, n):
        if '"Huge"' in r.messages[1]["content"]:
            raise ContextOverflowError("prompt does not fit n_ctx=10")
        return tiling_answer(*window_of(r))

    docs = [make_doc("small"), make_doc("big", title="Huge"), make_doc("small2")]
    res = LLMInducer(client_for(Scripted(fn)), TITLED).induce_many(docs)
    assert [r.status for r in res] == ["valid", "fallback", "valid"]
    assert res[1].violations == ["the prompt does not fit the model's context window"]
    assert [(s.para_start, s.para_end) for s in res[1].sections] == [(0, 8)]


# ------------------------------------------------------- the context budget (issue 15 §4)

def test_context_length_comes_from_the_stage_llm_block():
    def llm(data):
        return parse(LLMSettings, data)

    llama = llm({"backend": "llamacpp", "llamacpp": {"n_ctx": 4096}})
    assert with_context_tokens(InductionSettings(), llama).context_tokens == 4096
    assert context_tokens(llm({"backend": "llamacpp"})) == 8192  # LlamaCppSettings' default
    vllm = llm({"backend": "vllm", "vllm": {"max_model_len": 32768}})
    assert with_context_tokens(InductionSettings(), vllm).context_tokens == 32768
    # an explicit setting wins; an unknown context is an error naming the keys to set
    assert with_context_tokens(InductionSettings(context_tokens=1000), vllm
                               ).context_tokens == 1000
    for unknown in ({"backend": "openai"}, {"backend": "vllm"}, {"backend": "none"}):
        cfg = with_context_tokens(InductionSettings(), llm(unknown))
        with pytest.raises(ValueError, match="induction.context_tokens"):
            plan_windows(make_doc(), cfg)
    with pytest.raises(ValueError, match="leaves .* characters"):
        listing_budget(InductionSettings(context_tokens=2048, max_tokens=1024))
    with pytest.raises(ConfigError, match="para_char_caps"):
        parse(InductionSettings, {"para_char_caps": []}, "induction")
    with pytest.raises(ValueError, match="para_char_caps"):
        para_caps(InductionSettings(para_char_caps=(None,)))
    # the old "whole paragraphs first" step in a config is implicit now
    assert para_caps(parse(InductionSettings, {"para_char_caps": [None, 300]})) == (300,)


def test_induce_documents_takes_the_workflow_settings_objects(tmp_path):
    """The glue hands induce_documents the plan's typed settings (an LLMSettings, not a
    mapping); the context comes from its llama.cpp block (main's shadow config read the
    block with mapping access and failed on the settings object)."""
    docs = [make_doc()]
    llm = parse(LLMSettings, {"model": "m", "backend": "llamacpp",
                              "cache": str(tmp_path / "rec.jsonl"),
                              "llamacpp": {"n_ctx": 8192}})  # loaded only on a miss
    induction = InductionSettings(max_tokens=512)
    inducer = make_inducer(induction, llm)
    assert inducer.config.context_tokens == 8192
    inducer.client._backend = Scripted(lambda r, n: tiling_answer(*window_of(r)))
    first = inducer.induce_many(docs)
    inducer.client.close()
    pairs, report = induce_documents(docs, induction, replace(llm, mode="replay"))
    assert [p[1] for p in pairs] == [r.sections for r in first]
    assert report["context_tokens"] == 8192 and report["llm"]["cache_hits"] == 1


def test_budget_grows_with_the_context_and_shrinks_with_the_answers():
    small = listing_budget(InductionSettings(context_tokens=8192, max_tokens=1024))
    large = listing_budget(InductionSettings(context_tokens=32768, max_tokens=1024))
    assert abs(large - small - (32768 - 8192) * 3.0) <= 1
    one_round = listing_budget(InductionSettings(context_tokens=8192, max_tokens=1024,
                                               self_correction=False))
    assert one_round > small + 1024 * 3.0  # no second answer, no correction message
    assert listing_budget(InductionSettings(max_prompt_chars=5000)) == 5000


def _mixed_doc(n_long=6, n_short=6):
    b = DocumentBuilder("mixed", "Mixed")
    for i in range(n_long + n_short):
        words = 200 if i % 2 == 0 and i // 2 < n_long else 10
        b.add_paragraph(f"Paragraph {i}. " + " ".join(f"w{k}" for k in range(words)), ["H"])
    return b.build()


def test_truncate_only_when_the_document_does_not_fit(tmp_path):
    d = _mixed_doc()
    n = len(d.paragraphs)
    full = len(paragraph_listing(d, 0, n, None))
    # the whole document fits: no paragraph is cut, whatever the caps
    roomy = InductionSettings(max_prompt_chars=full, para_char_caps=(100,))
    assert plan_windows(d, roomy) == (None, [(0, n)])
    # one character short: the first cap that fits applies, and only long paragraphs are cut
    tight = InductionSettings(max_prompt_chars=full - 1, para_char_caps=(500, 100))
    cap, windows = plan_windows(d, tight)
    assert windows == [(0, n)] and cap == 500
    long_ones = [i for i in range(n) if len(d.paragraph_text(i)) > 500]
    assert long_ones and count_truncated(d, cap) == len(long_ones)
    backend = Scripted(lambda r, n_: tiling_answer(*window_of(r)))
    results = LLMInducer(client_for(backend), tight).induce_many([d, make_doc()])
    rep = induction_report(results, None, inducer="llm")
    short_doc = make_doc()
    assert rep["n_paragraphs"] == n + len(short_doc.paragraphs)
    assert rep["truncated_paragraphs"] == len(long_ones)
    assert rep["truncated_documents"] == 1
    assert rep["truncated_paragraph_share"] == pytest.approx(len(long_ones) / rep["n_paragraphs"])
    prompt = backend.requests[0].messages[1]["content"]
    assert prompt.count(" …") == len(long_ones)


def test_derived_budget_fits_the_real_tokenizer_on_the_bundled_sample(sample_corpus):
    """A document listed at the derived budget fits n_ctx with both answers, counted with
    the real model's tokenizer (Qwen2.5 if its GGUF is at hand, else SmolLM2's)."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not importable")
    from llama_cpp import Llama

    from structablate.llm.gguf import resolve_gguf

    try:
        path = resolve_gguf("smollm2-135m-instruct-q4_1")
    except Exception as exc:
        pytest.skip(f"SmolLM2 GGUF not available: {exc}")
    tok = Llama(str(path), vocab_only=True, verbose=False)

    def tokens(text):
        return len(tok.tokenize(text.encode(), add_bos=False)) + 12  # + chat template

    violations = [f"section {k} ('A fairly long section title of eight words'): starts at "
                  f"paragraph {k + 140} but should start at {k + 138} (gap)" for k in range(30)]
    docs = sample_corpus.documents
    checked = caps = 0
    for ctx in (4096, 8192):
        cfg = InductionSettings(context_tokens=ctx, max_tokens=512)
        budget = listing_budget(cfg)
        for d in docs:
            cap, windows = plan_windows(d, cfg)
            caps += cap is not None
            for lo, hi in windows:
                msgs = correction_messages(build_messages(d, lo, hi, cap, cfg), "",
                                           violations, lo, hi, cfg)
                used = sum(tokens(m["content"]) for m in msgs)
                assert used + 2 * cfg.max_tokens <= ctx, (d.doc_id, ctx, cap)
                assert len(paragraph_listing(d, lo, hi, cap)) <= budget
                checked += 1
    assert checked >= 2 * len(docs) and caps  # some documents needed a cap


def test_an_llm_inducer_holds_its_stage_lock_while_it_generates(tmp_path):
    """Induction takes the stage lock of its cache (the workflow names it induction/<corpus>),
    as contexts and question generation do: before, two induction jobs on one cache (a rerun
    beside a killed run's orphan) generated side by side."""
    llm = parse(LLMSettings, {"model": "m", "backend": "llamacpp",
                              "cache": str(tmp_path / "rec.jsonl"),
                              "llamacpp": {"n_ctx": 8192}})
    inducer = make_inducer(InductionSettings(max_tokens=512), llm, stage="induction/qasper")
    held = []

    def answer(request, n):
        held.append(inducer.client.stage_lock is not None and inducer.client.stage_lock.held)
        return tiling_answer(*window_of(request))

    inducer.client._backend = Scripted(answer)
    inducer.induce_many([make_doc()])
    lock_path = inducer.client.cache.lock_path("induction/qasper")
    assert held and all(held) and lock_path.exists()
    inducer.client.close()
    assert not lock_path.exists()
    # without a stage (a library call) no lock is taken
    plain = make_inducer(InductionSettings(max_tokens=512), replace(llm, cache=None))
    assert plain.client.stage is None
