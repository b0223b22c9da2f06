"""Every lint rule, by family. Codes are stable: TP1 names, TP2 descriptions, TP3 parameters, TP4 toolsets
(TP406 from two listings of a live server), TP5 effects."""

from __future__ import annotations

from typing import Final

from . import _components as components
from . import _descriptions as descriptions
from . import _effects as effects
from . import _listing as listing
from . import _names as names
from . import _params as params
from . import _toolset as toolset
from ._base import Hit, Rule

ALL_RULES: Final[tuple[Rule, ...]] = (*names.RULES, *descriptions.RULES, *components.RULES, *params.RULES,
                                      *toolset.RULES, *listing.RULES, *effects.RULES)
RUN_WIDE: Final = toolset.RUN_WIDE

__all__ = ["ALL_RULES", "RUN_WIDE", "Hit", "Rule"]
