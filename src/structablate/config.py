"""Checking a configuration mapping: :func:`check_config` validates it through the plan and
returns the settings with every default filled, as plain data. The settings themselves are
:mod:`structablate.settings`; the grid and paths are :mod:`structablate.plan`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from structablate.errors import ConfigError

__all__ = ["ConfigError", "check_config"]


def check_config(config: Mapping[str, Any], source: str = "config") -> dict[str, Any]:
    """The validated configuration with defaults filled; :class:`ConfigError` naming the key
    path (and ``source``) otherwise."""
    from structablate.plan import Plan
    from structablate.settings import dump

    return dump(Plan.from_config(config, source).settings)
