"""The operator's inbox: a small server-rendered web app over the store the agents write to.

Pages: pending approvals, open stop records and unknown outcomes, the audit trail, a dashboard. Every action
calls the same library function as the CLI and is audited. `toolproof ui` serves it (see `security.py` for
what keeps it private: loopback by default, a token otherwise, CSRF on every POST, the Host header checked).
"""

from .._surface import publish_all
from ._app import create_app

__all__ = ["create_app"]

publish_all(globals())
