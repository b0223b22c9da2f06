"""The running example: a produce wholesaler's ordering desk (see docs and the source article).

`build_toolset(shop)` gives the six redesigned tools bound to one `Shop`; `toolset` is a ready-made one on
an in-memory shop, for `toolproof export toolproof.examples.wholesaler:toolset` and quick experiments.
"""

from .shop import CROPS, Crop, Grade, Shop
from .tools import build_toolset

toolset = build_toolset(Shop())

__all__ = ["CROPS", "Crop", "Grade", "Shop", "build_toolset", "toolset"]
