"""The package's error base.

Every error structablate raises on purpose derives from :class:`StructablateError`, so a caller
(the workflow's glue, a notebook) can tell "the instrument refused this input" from a bug. The
specific errors keep a builtin base as well (``ValueError``, ``KeyError``, …) so code that
catches those keeps working. Each message names the file and the field or key at fault.
"""

from __future__ import annotations


class StructablateError(Exception):
    """Base of every deliberate error of the package."""


class ConfigError(StructablateError, ValueError):
    """A configuration value is missing, unknown or inconsistent; the message names the key
    path (``chunking.t_max``) and the file it came from."""


class EmbedderConfigError(ConfigError):
    """An embedder's or reranker's setting is invalid or cannot run here (a dtype this GPU
    does not compute, a backend on a device it does not run on); the message names the key."""
