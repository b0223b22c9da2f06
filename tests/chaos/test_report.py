"""The report reads the rows as they are: a double effect is marked in the table, counted in the summary and
shown in the HTML page, whose text is escaped (a tool's text never becomes markup)."""

from __future__ import annotations

import io

from rich.console import Console

from toolproof.chaos import Row, print_rows, render_html, summary

ROWS = [
    Row("order", "reply_lost", "bare", 2, 2, 2, 2, ("ReplyLost: <reset>", "ok"), "instrumented body"),
    Row("order", "reply_lost", "toolproof", 1, 1, 2, None, ("outcome_unknown X, next_action=escalate",) * 2,
        "instrumented body"),
    Row("order", "ok_did_nothing", "bare", None, None, 0, None, (), "not observable (no verify hook)"),
]


def test_the_summary_counts_double_effects_per_tool_and_way_through() -> None:
    s = summary(ROWS)
    assert (s["observed"], s["double_effects"]) == (2, 1)
    assert [(p["through"], p["double_effect_rate"], p["not_counted"]) for p in s["per_tool"]] == [
        ("bare", 1.0, ["ok_did_nothing"]), ("toolproof", 0.0, [])]


def test_the_text_table_marks_the_double_effect_and_says_how_it_was_counted() -> None:
    out = io.StringIO()
    print_rows(ROWS, Console(file=out, width=400), title="chaos [test]")
    text = out.getvalue()
    assert "chaos [test]" in text and "2 DOUBLE" in text and "never" in text
    assert "ReplyLost: <reset> | ok" in text and "not observable (no verify hook)" in text
    assert "order: effects counted by instrumented body" in text
    assert "double effects: 1 of 2 observed scenarios" in text


def test_the_html_page_escapes_text_and_charts_the_once_only_rate() -> None:
    page = render_html(ROWS, "chaos <run>")
    assert "<title>chaos &lt;run&gt;</title>" in page and "ReplyLost: &lt;reset&gt; | ok" in page
    assert "scenarios that took effect at most once" in page and "order (bare)" in page
    assert "<script" not in page and "http" not in page.replace("http://www.w3.org/2000/svg", "")
