"""One process that places conftest's ORDER once, with no conversation, and prints the envelope as JSON.

    python -m tests.e2e.who_is_asking_worker ORDERS_PATH STORE_URL

The orders file and the journal (a SQLite store) are shared with the other workers of the test.
"""

from __future__ import annotations

import sys

import toolproof
from tests.integrations.conftest import BUYER, ORDER, FaultyShop, faulty_toolset


def main(orders_path: str, store_url: str) -> None:
    shop = FaultyShop(orders_path, lost_replies=0)
    with toolproof.Runner(faulty_toolset(shop), store=store_url) as runner:
        envelope = runner.call_sync("place_order", ORDER, context=toolproof.CallContext(principal=BUYER))
    shop.close()
    print(envelope.to_json(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
