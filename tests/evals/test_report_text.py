"""Eval tables print model and tool text as text: brackets in a field name or a diagnosis are not rich markup."""

from __future__ import annotations

import io

from rich.console import Console

from toolproof.evals._report import print_schema


def test_schema_table_keeps_brackets_in_fields_and_diagnosis() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    data = {"rejected": 1, "checked": 3, "model_errors": None,
            "per_field": [{"tool": "place_order", "field": "[bold]lines[/bold]", "count": 1}],
            "diagnosis": ["place_order.[red]delivery_date[/red] got 'Thursday'"]}
    print_schema(data, console)
    text = out.getvalue()
    assert "[bold]lines[/bold]" in text
    assert "place_order.[red]delivery_date[/red] got 'Thursday'" in text
