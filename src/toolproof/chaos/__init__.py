"""`toolproof chaos`: the faults that make agents repeat actions, staged against a toolset's write tools, and
how many times each action took effect (the double-effect rate).

Nothing here reaches a system the tools do not already reach: the runs use a scratch store unless one is
named, and the tools' own functions are called, so point it at a toolset bound to test state.
"""

from .._surface import publish_all
from ._callers import Reply, Through
from ._report import REPORT_KIND, print_rows, render_html, summary
from ._run import DEFAULT_PRINCIPAL, Row, run_chaos, write_tools
from ._scenarios import SCENARIOS, Fault, Scenario, scenario

__all__ = ["DEFAULT_PRINCIPAL", "REPORT_KIND", "SCENARIOS", "Fault", "Reply", "Row", "Scenario", "Through",
           "print_rows", "render_html", "run_chaos", "scenario", "summary", "write_tools"]

publish_all(globals())
