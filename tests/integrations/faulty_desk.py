"""`toolproof serve tests.integrations.faulty_desk:toolset`: conftest's faulty desk on the orders file named
by FAULTY_SHOP_PATH (its first FAULTY_LOST_REPLIES orders, default 1, lose their reply), for the MCP tests'
`toolproof serve` children."""

from __future__ import annotations

import os

from tests.integrations.conftest import FaultyShop, faulty_toolset

toolset = faulty_toolset(FaultyShop(os.environ["FAULTY_SHOP_PATH"],
                                    lost_replies=int(os.environ.get("FAULTY_LOST_REPLIES", "1"))))
