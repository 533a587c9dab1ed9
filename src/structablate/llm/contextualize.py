"""A1 chunk contexts: the contextual-retrieval recipe (Anthropic 2024), verbatim prompt.

For each chunk the model sees the whole document and the chunk and writes a short context that
situates the chunk in the document. The context is whitespace-folded and cut to at most
``context_max_tokens`` tokens (:class:`~structablate.settings.ContextsSettings`; the paper's
80) of the **embedder's** tokenizer (the budget the paper states), at a word boundary where
possible; the chunk's prefix becomes ``context + " "``.

The prompt puts the document first and the chunk last, so the prompts of one document share
their longest possible prefix: llama.cpp re-evaluates only the tokens after the common prefix
of consecutive prompts (requests are issued in document order, a document's calls back to
back on one model: with worker processes, one per core, each takes whole documents), and
vLLM's ``enable_prefix_caching`` (on by default in
:class:`~structablate.llm.backends.VLLMBackend`) reuses the document's KV blocks across the
batch. The prompt is the recipe's single user message, without a system message of its own:
the chat template adds its default system prompt, the same in every call (SmolLM2's and
Qwen2.5's do), so the rendered prompts of one document are identical token for token up to and
including ``<chunk>\n`` (tests/test_prefix_reuse.py checks this with the GGUF's
template where the model is installed). Adding a system message would change every cache key.

Long documents: the recipe shows the whole document, and so does this module whenever the
prompt fits the model's context. :func:`document_char_budget` derives from the
:class:`~structablate.settings.ContextsSettings`, per document, how many characters of it fit:
the context length in tokens (``context_tokens``, by default what the stage's llm block states,
:func:`structablate.settings.with_context_tokens`) minus
the answer (``max_tokens``) and the chat template, converted with ``chars_per_token`` (3.0,
conservative: the bundled samples' documents hold 4.1-5.1 characters per token with the SmolLM2
and Qwen2.5 tokenizers; text with code, formulas or non-Latin scripts holds fewer), minus the
prompt's fixed text and the document's longest chunk. Only a longer document is shown in
windows: each chunk sees a window of the document instead of all of it. The windows are fixed —
the budget long, starting every half budget (snapped to whitespace) — and a chunk gets the
window whose centre is nearest its own centre (chunk spans are needed for this; without them
every chunk gets the document's head). Chunks that share a window share the prompt prefix.
``max_doc_chars`` sets a fixed character budget instead.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from structablate.llm.budget import prompt_char_budget
from structablate.settings import ContextsSettings

DOCUMENT_PROMPT = "<document>\n{doc_content}\n</document>\n"
CHUNK_PROMPT = (
    "Here is the chunk we want to situate within the whole document\n"
    "<chunk>\n{chunk_content}\n</chunk>\n"
    "Please give a short succinct context to situate this chunk within the overall document "
    "for the purposes of improving search retrieval of the chunk. Answer only with the "
    "succinct context and nothing else."
)

Tokenizer = Any

MESSAGE_OVERHEAD_TOKENS = 16
"""Tokens reserved for the chat template around the single user message and the answer."""


def document_char_budget(cfg: ContextsSettings, longest_chunk_chars: int) -> int:
    """Characters of a document one prompt can show next to its longest chunk.

    ``max_doc_chars`` when set; else ``(context_tokens - max_tokens - template) *
    chars_per_token`` minus the prompt's fixed text and ``longest_chunk_chars``. Raises
    ``ValueError`` when the context is unknown or leaves under 1,000 characters.
    """
    if cfg.max_doc_chars is not None:
        return int(cfg.max_doc_chars)
    return prompt_char_budget(
        "contexts", context_tokens=cfg.context_tokens,
        reserved_tokens=cfg.max_tokens + MESSAGE_OVERHEAD_TOKENS,
        chars_per_token=cfg.chars_per_token,
        fixed_chars=len(DOCUMENT_PROMPT) + len(CHUNK_PROMPT) + int(longest_chunk_chars),
        fixed_budget_key="max_doc_chars",
        shown=f"of the document next to a chunk of {longest_chunk_chars} characters")


def _counter(tokenizer: Tokenizer) -> Callable[[str], int]:
    if hasattr(tokenizer, "count") and hasattr(tokenizer, "truncate"):  # chunking.TokenCounter
        return lambda s: tokenizer.count([s])[0]
    if callable(tokenizer) and hasattr(tokenizer, "encode"):  # a Hugging Face tokenizer
        return lambda s: len(tokenizer(s, add_special_tokens=False)["input_ids"])
    if callable(tokenizer):  # a plain counting function
        return tokenizer
    raise TypeError(f"cannot count tokens with {type(tokenizer).__name__}")


def _cut(tokenizer: Tokenizer, text: str, max_tokens: int) -> str:
    """``text`` cut after ``max_tokens`` tokens, by offsets where the tokenizer has them."""
    if hasattr(tokenizer, "truncate"):
        return tokenizer.truncate(text, max_tokens)
    if callable(tokenizer) and hasattr(tokenizer, "encode"):
        try:
            enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            offsets = enc["offset_mapping"]
        except (NotImplementedError, KeyError, TypeError, ValueError):
            offsets = None
        if offsets is not None:
            return text if len(offsets) <= max_tokens else text[: offsets[max_tokens - 1][1]]
    count = _counter(tokenizer)
    words = text.split(" ")
    lo, hi = 0, len(words)  # the longest word prefix that fits, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid])) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def clean_context(text: str) -> str:
    """Fold whitespace, strip wrapping quotes and a leading ``Context:`` label."""
    t = " ".join(text.split())
    t = re.sub(r"^(?:succinct\s+)?context\s*:\s*", "", t, flags=re.IGNORECASE)
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1].strip()
    return t


def truncate_to_tokens(text: str, tokenizer: Tokenizer, max_tokens: int) -> str:
    """``text`` with at most ``max_tokens`` tokens of ``tokenizer``, cut at a word boundary.

    ``tokenizer``: a :class:`structablate.chunking.tokens.TokenCounter`, a Hugging Face
    tokenizer, or a function ``str -> int`` counting tokens. Special tokens are not counted.
    """
    if max_tokens <= 0:
        return ""
    count = _counter(tokenizer)
    if count(text) <= max_tokens:
        return text
    cut = _cut(tokenizer, text, max_tokens)
    n = len(cut)
    if 0 < n < len(text) and text[n - 1].isalnum() and text[n].isalnum():
        head = cut.rsplit(" ", 1)[0] if " " in cut else cut
        if len(head) >= n // 2:
            cut = head
    cut = cut.rstrip()
    while cut and count(cut) > max_tokens:  # defensive: re-tokenization can differ at the end
        cut = cut.rsplit(" ", 1)[0] if " " in cut else ""
    return cut


def document_windows(doc_text: str, max_doc_chars: int) -> list[tuple[int, int]]:
    """The fixed windows ``[a, b)`` of a long document (see the module docstring)."""
    n = len(doc_text)
    if n <= max_doc_chars:
        return [(0, n)]
    stride = max(1, max_doc_chars // 2)
    out: list[tuple[int, int]] = []
    a = 0
    while True:
        start = a
        if start > 0:  # snap forward to the next whitespace
            m = re.search(r"\s", doc_text[start : start + 200])
            start = start + m.end() if m else start
        end = min(n, a + max_doc_chars)
        if end < n:
            ws = doc_text.rfind(" ", start, end)
            end = ws if ws > start + max_doc_chars // 2 else end
        out.append((start, end))
        if a + max_doc_chars >= n:
            break
        a += stride
    return out


def context_messages(document: str, chunk: str) -> list[dict[str, str]]:
    """The recipe's single user message: document first, then the chunk and the instruction."""
    return [{"role": "user",
             "content": DOCUMENT_PROMPT.format(doc_content=document)
             + CHUNK_PROMPT.format(chunk_content=chunk)}]


def context_requests(
    doc_text: str,
    chunk_texts: Sequence[str],
    client,
    *,
    max_tokens: int = ContextsSettings.max_tokens,
    max_doc_chars: int | None = None,
    chunk_spans: Sequence[tuple[int, int]] | None = None,
) -> tuple[list, list[int]]:
    """The requests of one document's chunks and their order: ``(requests, order)``, where
    ``requests[k]`` asks for the context of chunk ``order[k]``. A document longer than
    ``max_doc_chars`` (characters) is shown in windows (:func:`document_windows`), each chunk
    with the window nearest its middle (``chunk_spans``: character offsets ``[start, end)`` in
    ``doc_text``); requests are ordered by window so that those sharing a prompt prefix follow
    each other."""
    if chunk_spans is not None and len(chunk_spans) != len(chunk_texts):
        raise ValueError("chunk_spans must have one span per chunk")
    windows = [(0, len(doc_text))]
    if max_doc_chars and len(doc_text) > max_doc_chars:
        windows = document_windows(doc_text, max_doc_chars)
    assign = []
    for i in range(len(chunk_texts)):
        if len(windows) == 1 or chunk_spans is None:
            assign.append(0)
            continue
        c = (chunk_spans[i][0] + chunk_spans[i][1]) / 2
        assign.append(min(range(len(windows)),
                          key=lambda w: (abs((windows[w][0] + windows[w][1]) / 2 - c), w)))
    order = sorted(range(len(chunk_texts)), key=lambda i: (assign[i], i))
    requests = []
    for i in order:
        a, b = windows[assign[i]]
        requests.append(client.request(context_messages(doc_text[a:b], chunk_texts[i]),
                                       max_tokens=max_tokens))
    return requests, order


def contexts_from_texts(
    texts: Sequence[str],
    order: Sequence[int],
    *,
    tokenizer: Tokenizer | None = None,
    context_max_tokens: int = ContextsSettings.context_max_tokens,
) -> list[str]:
    """The contexts of one document's chunks, in chunk order, from the generated ``texts`` of
    :func:`context_requests` (in its ``order``): cleaned, and cut to ``context_max_tokens``
    tokens when a ``tokenizer`` is given."""
    out = [""] * len(order)
    for i, t in zip(order, texts, strict=True):
        ctx = clean_context(t)
        if tokenizer is not None:
            ctx = truncate_to_tokens(ctx, tokenizer, context_max_tokens)
        out[i] = ctx
    return out


def contextualize(
    doc_text: str,
    chunk_texts: Sequence[str],
    client,
    *,
    tokenizer: Tokenizer | None = None,
    context_max_tokens: int = ContextsSettings.context_max_tokens,
    max_tokens: int = ContextsSettings.max_tokens,
    max_doc_chars: int | None = None,
    chunk_spans: Sequence[tuple[int, int]] | None = None,
) -> list[str]:
    """One situating context per chunk (cleaned, at most ``context_max_tokens`` tokens).

    ``client`` is an :class:`~structablate.llm.client.LLMClient`; ``max_tokens`` bounds the
    generation itself (model tokens). Without a ``tokenizer`` no cut is made.
    """
    requests, order = context_requests(doc_text, chunk_texts, client, max_tokens=max_tokens,
                                       max_doc_chars=max_doc_chars, chunk_spans=chunk_spans)
    return contexts_from_texts(client.generate_many(requests), order, tokenizer=tokenizer,
                               context_max_tokens=context_max_tokens)


def contextualize_chunks(
    chunks,
    documents,
    client,
    tokenizer: Tokenizer,
    *,
    config: ContextsSettings | None = None,
    context_max_tokens: int = ContextsSettings.context_max_tokens,
    max_tokens: int = ContextsSettings.max_tokens,
    max_doc_chars: int | None = None,
    progress: bool = False,
    report: dict[str, Any] | None = None,
):
    """A chunks table with ``prefix = context + " "`` and ``prefix_tokens`` recounted.

    ``chunks`` and ``documents`` are polars frames with the contract columns; rows keep their
    order. An empty context gives an empty prefix and 0 prefix tokens.

    With ``config`` (the workflow's way: the ``contexts`` settings with ``context_tokens``
    resolved, :func:`structablate.settings.with_context_tokens`) its fields replace the three
    keyword settings and each document's budget is :func:`document_char_budget` for its
    longest chunk. Without it,
    ``max_doc_chars`` is a fixed budget and ``None`` shows every document whole. ``report``,
    when a dict, receives ``documents``, ``windowed_documents`` (shown in windows),
    ``min_doc_char_budget`` and, with ``config``, ``context_tokens`` and ``chars_per_token``.

    The client receives the requests in full batches of its ``batch_size`` across documents
    (the last one partial), in document order; the contexts equal those of
    :func:`contextualize` called one document at a time. A client with worker processes
    (``client.processes > 1``: llama.cpp with one process per core) receives whole documents
    instead (:meth:`~structablate.llm.client.LLMClient.generate_documents`), in rounds of at
    least ``batch_size`` requests per worker; the requests, and so the cache keys, are the same.
    """
    import polars as pl

    texts = dict(zip(documents["doc_id"].to_list(), documents["text"].to_list(), strict=True))
    prefixes: list[str] = [""] * chunks.height
    rows: dict[str, list[int]] = {}
    for i, d in enumerate(chunks["doc_id"].to_list()):
        rows.setdefault(d, []).append(i)
    starts = chunks["start"].to_list()
    ends = chunks["end"].to_list()
    if config is not None:
        context_max_tokens, max_tokens = config.context_max_tokens, config.max_tokens
    items = rows.items()
    if progress:
        from tqdm import tqdm

        items = tqdm(items, desc="contexts", unit="doc")
    windowed = 0
    budgets: list[int] = []
    # requests are handed over in full batches of the client's batch size, across documents
    # (vLLM generates a batch at once; before, each document was a call of its own, a barrier
    # after every paper); a document's requests stay consecutive, so those sharing its prompt
    # prefix still follow each other, and each batch is committed to the cache as it returns
    batch = max(1, int(getattr(client, "batch_size", 1) or 1))
    # a client with worker processes (llama.cpp, one per core) gets whole documents, in rounds
    # of at least batch_size requests per worker: each worker runs one document's calls back
    # to back on its own model, so they share the document's KV cache
    workers = int(getattr(client, "processes", 1) or 1)
    documents_round: list[tuple[list[int], list[int], list]] = []  # (rows, order, requests)

    def run_round() -> None:
        groups = client.generate_documents([r for _, _, r in documents_round])
        for (idx, order, _), texts_ in zip(documents_round, groups, strict=True):
            ctxs = contexts_from_texts(texts_, order, tokenizer=tokenizer,
                                       context_max_tokens=context_max_tokens)
            for i, c in zip(idx, ctxs, strict=True):
                prefixes[i] = c + " " if c else ""
        documents_round.clear()

    pending: deque[tuple[list[int], list[int]]] = deque()  # (rows, order) of each document
    requests: list = []  # the requests of the pending documents, in order
    done: list[str] = []  # the texts generated for requests[:len(done)]

    def advance(final: bool) -> None:
        start = len(done)
        stop = len(requests) if final else start + (len(requests) - start) // batch * batch
        if stop > start:
            done.extend(client.generate_many(requests[start:stop]))
        while pending and len(pending[0][1]) <= len(done):
            idx, order = pending.popleft()
            ctxs = contexts_from_texts(done[:len(order)], order, tokenizer=tokenizer,
                                       context_max_tokens=context_max_tokens)
            del done[:len(order)], requests[:len(order)]
            for i, c in zip(idx, ctxs, strict=True):
                prefixes[i] = c + " " if c else ""

    for doc_id, idx in items:
        text = texts[doc_id]
        spans = [(starts[i], ends[i]) for i in idx]
        budget = max_doc_chars
        if config is not None:
            budget = document_char_budget(config, max(b - a for a, b in spans))
        if budget is not None:
            budgets.append(budget)
            windowed += len(text) > budget
        doc_requests, order = context_requests(
            text, [text[a:b] for a, b in spans], client, max_tokens=max_tokens,
            max_doc_chars=budget, chunk_spans=spans)
        if workers > 1:
            documents_round.append((idx, order, doc_requests))
            if sum(len(r) for _, _, r in documents_round) >= batch * workers:
                run_round()
            continue
        pending.append((idx, order))
        requests.extend(doc_requests)
        if len(requests) - len(done) >= batch:
            advance(final=False)
    if documents_round:
        run_round()
    advance(final=True)
    if report is not None:
        report.update(documents=len(rows), windowed_documents=windowed,
                      min_doc_char_budget=min(budgets) if budgets else None)
        if config is not None:
            report.update(context_tokens=config.context_tokens,
                          chars_per_token=config.chars_per_token)
    count = _counter(tokenizer)
    counts = [count(p) if p else 0 for p in prefixes]
    return chunks.with_columns(
        pl.Series("prefix", prefixes, dtype=pl.String),
        pl.Series("prefix_tokens", counts, dtype=pl.Int32),
    )
