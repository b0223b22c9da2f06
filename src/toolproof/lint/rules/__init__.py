"""Every lint rule, by family. Codes are stable: TP1 names, TP2 descriptions, TP3 parameters, TP4 toolsets
(TP406 from two listings of a live server), TP5 effects."""

from __future__ import annotations

from typing import Final

from . import components, descriptions, effects, listing, names, params, toolset
from .base import Hit, Rule

ALL_RULES: Final[tuple[Rule, ...]] = (*names.RULES, *descriptions.RULES, *components.RULES, *params.RULES,
                                      *toolset.RULES, *listing.RULES, *effects.RULES)
RUN_WIDE: Final = toolset.RUN_WIDE

__all__ = ["ALL_RULES", "RUN_WIDE", "Hit", "Rule"]
