"""`toolproof serve tests.integrations.faulty_desk:toolset`: conftest's faulty desk on the orders file named
by FAULTY_SHOP_PATH, for the MCP tests' `toolproof serve` children."""

from __future__ import annotations

import os

from tests.integrations.conftest import FaultyShop, faulty_toolset

toolset = faulty_toolset(FaultyShop(os.environ["FAULTY_SHOP_PATH"]))
