"""How many characters of variable text (a document, a numbered paragraph listing) one prompt of
an LLM stage may hold, from the model's context length in tokens.

The stages cache their prompts by text, so the budget is computed from settings alone, never
from a tokenizer: ``(context_tokens - reserved_tokens) * chars_per_token`` characters, less the
characters of the prompt's fixed text. A stage that knows no context length, or whose context
leaves under :data:`MIN_PROMPT_CHARS`, is refused with a message naming its keys.
"""

from __future__ import annotations

MIN_PROMPT_CHARS = 1000
"""The fewest characters of variable text a prompt may be left with."""


def prompt_char_budget(
    stage: str,
    *,
    context_tokens: int | None,
    reserved_tokens: int,
    chars_per_token: float,
    fixed_chars: int,
    fixed_budget_key: str,
    shown: str,
) -> int:
    """Characters of variable text one prompt of ``stage`` (``induction``, ``contexts``) may
    hold: ``int((context_tokens - reserved_tokens) * chars_per_token) - fixed_chars``.

    ``reserved_tokens``: the answers' tokens and the chat template's per-message tokens;
    ``fixed_chars``: the prompt text around the variable part; ``fixed_budget_key``: the
    stage's key that sets a budget in characters instead (named when the context is unknown);
    ``shown``: what the budget is for, as the refusal names it ("of the document next to a chunk
    of 900 characters"). Raises ``ValueError`` when ``context_tokens`` is None or the budget is
    under :data:`MIN_PROMPT_CHARS`.
    """
    if context_tokens is None:
        raise ValueError(
            f"{stage}: the model's context length is unknown (the llm block sets neither "
            f"llamacpp.n_ctx nor vllm.max_model_len); set {stage}.context_tokens, or "
            f"{stage}.{fixed_budget_key} for a fixed budget in characters")
    budget = int((context_tokens - reserved_tokens) * chars_per_token) - fixed_chars
    if budget < MIN_PROMPT_CHARS:
        raise ValueError(
            f"{stage}: a context of {context_tokens} tokens leaves {budget} characters "
            f"{shown}; raise the context (llm.llamacpp.n_ctx / llm.vllm.max_model_len / "
            f"{stage}.context_tokens)")
    return budget
