"""Credentials never enter the configuration: :func:`refuse_secrets` finds credential-shaped
values in a config mapping before anything else reads it.

Every setting that can change an output is a rule's ``params`` (its rerun trigger), and
Snakemake stores params in plain text under ``.snakemake/metadata``; the settings are also
written into logs and the report's provenance. So a credential in the config would land in
files, and it is refused instead: API keys come from the environment variable that
``llm.openai.api_key_env`` names (default ``OPENAI_API_KEY``).

Credential-shaped (the value itself is never echoed):

* a string under a key whose name has a word ``key``, ``apikey``, ``token``,
  ``secret``, ``password``, ``passwd``, ``pwd``, ``auth``, ``authorization``, ``credential``,
  ``credentials``, ``cookie`` or ``bearer`` (words split at ``_``, ``-``, ``.`` and case
  changes; ``max_tokens`` and ``api_key_env``, whose value names a variable, are not);
* a URL with user information (``https://user:pass@host/…``, ``https://TOKEN@host/…``);
* a string that starts with ``Bearer `` or ``Basic `` (an HTTP Authorization value).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from structablate.errors import ConfigError

__all__ = ["find_secrets", "refuse_secrets"]

_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "auth",
          "authorization", "credential", "credentials", "cookie", "bearer"}
_URL_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]+@", re.ASCII)
_AUTH_VALUE = re.compile(r"^\s*(bearer|basic)\s+\S", re.IGNORECASE)


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[\s_.\-]+", spaced) if w]


def _secret_key(name: str) -> bool:
    words = _words(name)
    return bool(words) and words[-1] != "env" and any(w in _WORDS for w in words)


def find_secrets(config: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(key path, why)`` of every credential-shaped value in ``config`` (module
    docstring); key paths are dotted, list items ``[i]``."""
    if isinstance(config, Mapping):
        for key, value in config.items():
            sub = f"{path}.{key}" if path else str(key)
            if isinstance(value, str) and value.strip() and _secret_key(str(key)):
                yield sub, "a key named like a credential holds a value"
            else:
                yield from find_secrets(value, sub)
    elif isinstance(config, list | tuple):
        for i, value in enumerate(config):
            yield from find_secrets(value, f"{path}[{i}]")
    elif isinstance(config, str):
        if _URL_USERINFO.match(config.strip()):
            yield path, "a URL with a user name or password (user:pass@host)"
        elif _AUTH_VALUE.match(config):
            yield path, "an HTTP Authorization value (Bearer/Basic)"


def refuse_secrets(config: Mapping[str, Any], source: str = "config") -> None:
    """Raise :class:`ConfigError` naming the key path of every credential-shaped value in
    ``config`` (never the value)."""
    found = list(find_secrets(config))
    if found:
        lines = "\n  ".join(f"{where}: {why}" for where, why in found[:10])
        raise ConfigError(
            f"{source}: credentials are not read from the config (Snakemake stores rule "
            f"params, and so the settings, in plain text under .snakemake/metadata):\n  {lines}"
            "\nput an API key in an environment variable and name it in llm.openai.api_key_env "
            "(default OPENAI_API_KEY); give base_url without user:pass@")
