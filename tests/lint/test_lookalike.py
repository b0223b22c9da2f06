"""Look-alikes by what tools do: description pairs whatever the names, catch-all tools, clusters (TP402, TP405)."""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.examples.wholesaler.old_tools import old_toolset
from toolproof.lint import LintConfig, from_definitions, lint, lint_tooldefs
from toolproof.lint._rules._overlap import Descriptions, candidate_pairs, how_many
from toolproof.lint._rules._toolset import embedding_pairs
from toolproof.retrieval.static import StaticEncoder

SELECT = LintConfig(select=("TP402", "TP405"))


def _tool(name: str, description: str, **props: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}}
    return {"name": name, "description": description, "inputSchema": schema}


def _pairs(defs: list[dict[str, Any]]) -> set[frozenset[str]]:
    found = lint_tooldefs(from_definitions(defs), SELECT)
    return {frozenset((f.tool, f.message.split("'")[1])) for f in found if f.code == "TP402"}


def test_the_old_price_tools_are_one_cluster() -> None:
    cluster = {f.tool for f in lint(old_toolset) if f.code == "TP405"}
    assert cluster == {"search", "get_data", "rates", "price_lookup"}
    message = next(f.message for f in lint(old_toolset) if f.code == "TP405")
    assert "4 tools" in message and all(repr(n) in message for n in cluster)


def test_other_action_words_and_descriptions_one_word_apart_are_reported() -> None:
    pairs = _pairs([
        _tool("list_invoices", "List the invoices of a customer, newest first.", customer_id="string"),
        _tool("get_invoices", "Get the invoices of a customer, newest first.", customer_id="string"),
        _tool("create_invoice", "Create an invoice for a customer.", customer_id="string"),
    ])
    assert pairs == {frozenset({"list_invoices", "get_invoices"})}
    found = lint_tooldefs(from_definitions([
        _tool("list_invoices", "List the invoices of a customer, newest first."),
        _tool("get_invoices", "Get the invoices of a customer, newest first.")]), SELECT)
    assert "invoice" in found[0].message and "customer" in found[0].message  # the overlapping words
    assert "what it does that the other does not" in found[0].fix


def test_fetch_and_get_of_one_thing_are_reported() -> None:
    pairs = _pairs([_tool("fetch_weather", "Returns the current weather for a city."),
                    _tool("get_weather", "Returns today's weather for a city by name.")])
    assert pairs == {frozenset({"fetch_weather", "get_weather"})}


def test_crud_siblings_converse_and_one_vs_many_stay_out() -> None:
    assert _pairs([
        _tool("create_invoice", "Create an invoice for a customer."),
        _tool("delete_invoice", "Delete an invoice for a customer."),
        _tool("celsius_to_fahrenheit", "Convert a temperature from Celsius to Fahrenheit."),
        _tool("fahrenheit_to_celsius", "Convert a temperature from Fahrenheit to Celsius."),
        _tool("get_advisory", "Get a security advisory of the repository."),
        _tool("list_advisories", "List security advisories of the repository."),
        _tool("fetch_html", "Fetch a website and return the content as HTML."),
        _tool("fetch_txt", "Fetch a website and return the content as plain text."),
    ]) == set()


def test_a_description_that_names_the_other_tool_is_not_a_lookalike() -> None:
    assert _pairs([_tool("list_invoices", "List the invoices of a customer. For one invoice use get_invoices."),
                   _tool("get_invoices", "Get the invoices of a customer. For one invoice use get_invoices.")]) == set()


_WORDS = ["invoice", "customer", "order", "price", "stock", "report", "user", "group", "page", "city", "weather",
          "list", "get", "delete", "update", "the", "of", "for", "new", "all", "by", "id"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6), min_size=2, max_size=25))
def test_candidates_are_exactly_the_pairs_with_one_word_set(docs: list[list[str]]) -> None:
    tools = from_definitions([_tool(f"t{i}", " ".join(d)) for i, d in enumerate(docs)])
    desc = Descriptions(tools)
    blocked = {frozenset(p) for p in candidate_pairs(desc)}
    naive = {frozenset((i, j)) for i, j in itertools.combinations(range(len(tools)), 2)
             if set(desc.tokens[i]) == set(desc.tokens[j]) and len(set(desc.tokens[i])) >= 3}
    assert blocked == naive


@settings(max_examples=15, deadline=None)
@given(st.randoms(use_true_random=False))
def test_findings_do_not_depend_on_tool_order(rnd: random.Random) -> None:
    defs = [_tool("list_invoices", "List the invoices of a customer."),
            _tool("get_invoices", "Get the invoices of a customer."),
            _tool("search", "Search for information."), _tool("get_data", "Gets data."),
            _tool("rates", "Get rates for items.", item="string"),
            _tool("price_lookup", "Look up the price of an item.", item="string")]
    shuffled = defs[:]
    rnd.shuffle(shuffled)
    key = lambda fs: sorted((f.code, f.tool, *sorted(f.message.split("'")[1::2])) for f in fs)  # noqa: E731
    assert key(lint_tooldefs(from_definitions(defs), SELECT)) == key(lint_tooldefs(from_definitions(shuffled), SELECT))


def test_numbers_how_many_and_word_order_tell_descriptions_apart() -> None:
    assert _pairs([
        _tool("over_15_goals", "Delivers daily over 1.5 goal forecasts for football matches."),
        _tool("over_25_goals", "Delivers daily over 2.5 goal forecasts for football matches."),
        _tool("empty_cart", "Removes all items in the shopping cart."),
        _tool("remove_item", "Removes items from the shopping cart."),
        _tool("convert_hex", "Converts a hex color code to other color codes like rgb."),
        _tool("convert_rgb", "Converts a rgb color code to other color codes like hex."),
    ]) == set()


def test_one_vs_many_names_whose_descriptions_say_which_and_directed_converses_stay_out() -> None:
    assert _pairs([
        _tool("word", "Returns a random word from the dictionary."),
        _tool("words", "Returns random words from the dictionary."),
        _tool("categories", "Get a list of categories."),
        _tool("get_category", "Get a specific category."),
        _tool("get_drug_names_by_risk", "Retrieve drug names based on risk information."),
        _tool("get_risk_info_by_drug_name", "Retrieve risk information based on drug names."),
    ]) == set()
    assert _pairs([_tool("get_sentence", "Returns a random sentence from the book."),
                   _tool("get_sentence_v2", "Returns a random sentence from the book.")]) != set()


THREE_NAMES = [
    _tool("fetch_quote", "Returns the latest market price of a stock for a ticker symbol, in US dollars.",
          symbol="string"),
    _tool("ticker_lookup", "Look up the current trading price of a share by its ticker, quoted in US dollars.",
          symbol="string"),
    _tool("equity_now", "Gives the present market value of one stock share for a ticker symbol, in dollars.",
          symbol="string"),
    _tool("create_alert", "Create a price alert that emails the user when a stock crosses a given level.",
          symbol="string", level="number"),
]
MEANING = LintConfig(select=("TP402", "TP405"), thresholds={"lookalike-embedding": 0.7})


def test_one_job_under_unrelated_names_is_found_by_meaning_when_the_embedding_pass_is_on() -> None:
    lexical = lint_tooldefs(from_definitions(THREE_NAMES), SELECT)
    assert not lexical  # no shared wording: the lexical passes see nothing
    found = lint_tooldefs(from_definitions(THREE_NAMES), MEANING)
    cluster = {f.tool for f in found if f.code == "TP405"}
    assert cluster == {"fetch_quote", "ticker_lookup", "equity_now"}
    assert all("cosine" in f.message for f in found if f.code == "TP402")
    assert "create_alert" not in {f.tool for f in found}  # another job (and a write) stays out


def _by_meaning(defs: list[dict[str, Any]]) -> set[frozenset[str]]:
    found = lint_tooldefs(from_definitions(defs), MEANING)
    return {frozenset((f.tool, f.message.split("'")[1])) for f in found if f.code == "TP402"}


def test_the_pass_by_meaning_needs_schemas_that_agree() -> None:
    """The stock tools with parameter names that share nothing, or none at all: the schemas give no second
    signal, so the pass by meaning stays quiet."""
    apart = [dict(t, inputSchema={"type": "object", "properties": {f"{t['name']}_key": {"type": "string"}}})
             for t in THREE_NAMES[:3]]
    assert _by_meaning(apart) == set()
    bare = [dict(t, inputSchema={"type": "object", "properties": {}}) for t in THREE_NAMES[:3]]
    assert _by_meaning(bare) == set()


def test_names_one_word_apart_are_not_one_job_by_meaning() -> None:
    """Descriptions a mean of word vectors puts together, schemas that agree, and names that tell the jobs
    apart: one slot filled two ways (back, forward) or one name plus a part that takes its own id (a rule of
    a policy)."""
    go = [_tool("playwright_go_back", "Navigate back in the browser history of the current page tab.",
                tab="string"),
          _tool("playwright_go_forward", "Navigate forward in the browser history of the current page tab.",
                tab="string")]
    policy = [{"name": "delete_policy", "description": "Delete an access policy of the organisation by its id.",
               "inputSchema": {"type": "object", "properties": {"policy_id": {"type": "string"}},
                               "required": ["policy_id"]}},
              {"name": "delete_policy_rule", "description": "Delete a rule of an access policy of the "
               "organisation by its id.", "inputSchema": {"type": "object", "properties": {
                   "policy_id": {"type": "string"}, "rule_id": {"type": "string"}},
                   "required": ["policy_id", "rule_id"]}}]
    for defs in (go, policy):
        assert not lint_tooldefs(from_definitions(defs), SELECT)  # nor do the lexical passes
        assert _by_meaning(defs) == set(), defs[0]["name"]
        # the same definitions under names that share no word are reported: the names decided
        assert _by_meaning([dict(defs[0], name="alpha"), dict(defs[1], name="beta")]) == {
            frozenset(("alpha", "beta"))}, defs[0]["name"]


def test_renamed_and_added_optional_parameters_and_a_namespace_are_one_job_by_meaning() -> None:
    """One job whose schemas share no parameter name (origin, destination against start_location,
    end_location, plus an optional unit) and whose names add a namespace: the old second signal (half the
    parameter names shared) missed it; the same required parameters by count and type do not."""
    def tool(name: str, description: str, props: dict[str, str], required: list[str]) -> dict[str, Any]:
        return {"name": name, "description": description, "inputSchema": {
            "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": required}}
    distance = [tool("maps.road_distance", "Compute the driving distance by road between two places on the map.",
                     {"origin": "string", "destination": "string", "unit": "string"}, ["origin", "destination"]),
                tool("route_length", "Calculate the road driving distance between two locations on a map.",
                     {"start_location": "string", "end_location": "string"}, ["start_location", "end_location"])]
    assert _by_meaning(distance) == {frozenset(("maps.road_distance", "route_length"))}
    # the same call, but one needs a number (a radius in km) the other does not: other required types
    apart = [distance[0], dict(distance[1], inputSchema={"type": "object", "properties": {
        "start_location": {"type": "string"}, "radius_km": {"type": "number"}},
        "required": ["start_location", "radius_km"]})]
    assert _by_meaning(apart) == set()


def test_one_required_string_each_and_names_one_slot_apart_are_not_one_job() -> None:
    """The required-type test admits many pairs (one string each): the names still tell air quality from the
    weather."""
    defs = [_tool("air_quality_forecast", "Retrieve the forecast for a location over the next few days.",
                  location="string"),
            _tool("weather_forecast", "Retrieve the forecast for a location over the next few days ahead.",
                  location="string")]
    for d in defs:
        d["inputSchema"]["required"] = ["location"]
    assert _by_meaning(defs) == set()
    assert _by_meaning([dict(defs[0], name="alpha"), dict(defs[1], name="beta")]) == {frozenset(("alpha", "beta"))}


def test_an_empty_description_says_no_how_many() -> None:
    assert how_many("") == (frozenset(), frozenset())



def _browser(prefix: str, verb: str, description: str) -> dict[str, Any]:
    return _tool(f"{prefix}_{verb}", description, selector="string")


BROWSERS = [
    _browser("playwright", "click", "Click an element on the current page."),
    _browser("playwright", "fill", "Fill out an input field on the current page."),
    _browser("playwright", "hover", "Hover the mouse over an element on the current page."),
    _browser("puppeteer", "click", "Clicks a page element found by its selector."),
    _browser("puppeteer", "fill", "Enter a value into an input field on the current page."),
    _browser("puppeteer", "hover", "Moves the mouse over a page element found by its selector."),
]


def test_two_servers_prefixes_before_one_verb_are_one_job_by_meaning() -> None:
    """A gateway's one listing holds two browser servers whose names differ only in the server's prefix: the
    prefix (three tools of the listing lead with it before their verb) names no object, so each pair of one
    verb is one job; the pairs of two verbs stay apart."""
    assert not lint_tooldefs(from_definitions(BROWSERS), SELECT)  # other wording: the lexical passes see nothing
    assert _by_meaning(BROWSERS) == {frozenset((f"playwright_{v}", f"puppeteer_{v}"))
                                     for v in ("click", "fill", "hover")}


def test_a_prefix_names_the_server_or_leads_three_tools_else_it_is_the_object() -> None:
    """One tool per prefix is no convention: the prefix counts when it names the tool's own server, and
    otherwise the word before the verb is the object (`component_search`, `service_search`)."""
    clicks = [t for t in BROWSERS if t["name"].endswith("_click")]
    assert _by_meaning(clicks) == set()
    on_servers = [t for server, d in (("Playwright MCP Server", clicks[0]), ("Puppeteer", clicks[1]))
                  for t in from_definitions({"server": server, "tools": [d]})]
    assert [t.toolset for t in on_servers] == ["Playwright MCP Server", "Puppeteer"]
    # two servers' tools judged together, as a pair alone (what the labelled rounds measure)
    config = dataclasses.replace(MEANING, encoder=StaticEncoder())
    assert [(i, j) for i, j, _ in embedding_pairs(on_servers, config)] == [(0, 1)]
    search = [_tool("component_search", "Search the catalogue and return the matching entries by keyword.",
                    keyword="string"),
              _tool("service_search", "Look up catalogue entries that match a keyword and list them.",
                    keyword="string")]
    assert _by_meaning(search) == set()
    assert _by_meaning([dict(search[0], name="alpha"), dict(search[1], name="beta")]) == {
        frozenset(("alpha", "beta"))}  # the names decided


def test_a_collection_word_says_many_after_a_only_where_it_counts() -> None:
    """"a page of results" and "a list" say many; "a page element" and "a number to add" say one."""
    assert how_many("Returns a page of results")[1] == {"many"}
    assert how_many("Returns a list")[1] == {"many"}
    assert how_many("Click a page element")[1] == {"one"}
    assert how_many("Adds a number to the total")[1] == {"one"}
