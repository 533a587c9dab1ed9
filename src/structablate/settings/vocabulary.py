"""The vocabulary every settings class shares: the condition, structure and question-type
names a config may use (from :mod:`structablate.study`), and the frozen keyword-only dataclass
form of a settings block."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeVar

from structablate import study

CONDITION_NAMES = study.CONDITION_NAMES
"""The eleven conditions of the paper's Table 4, then structablate's own controls GP and A0g
(definitions: :mod:`structablate.study`)."""

Condition = Literal[study.CONDITION_NAMES]
StructureName = Literal[study.STRUCTURE_NAMES]
QType = Literal["factoid", "underspecified", "multihop", "structural"]
QTYPES: tuple[str, ...] = ("factoid", "underspecified", "multihop", "structural")

frozen = dataclass(frozen=True, kw_only=True)
T = TypeVar("T")
