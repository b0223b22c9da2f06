"""`ToolIndex` on small fixed corpora whose rankings are known by construction."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.retrieval import ToolEntry, ToolIndex, Usage, UsageHistory, infer_requires

CORPUS = [
    ToolEntry("weather::get_forecast", "get_forecast", "Weather forecast for a city for the next days.",
              (("city", "City name"), ("days", "How many days")), group="weather"),
    ToolEntry("weather::get_current_weather", "get_current_weather", "Current temperature and wind in a city.",
              (("city", "City name"),), group="weather"),
    ToolEntry("files::write_file", "write_file", "Write text content to a file on disk, replacing it.",
              (("path", "Absolute path"), ("content", "Text to write")), group="files"),
    ToolEntry("files::read_file", "read_file", "Read the text content of a file.", (("path", "Absolute path"),),
              group="files"),
    ToolEntry("captcha::generate_captcha", "generateCaptcha", "Create a captcha image and its solution."),
    ToolEntry("blank", "list_things", ""),
    ToolEntry("cn::bing_search", "bing_search", "使用必应搜索指定的关键词，并返回搜索结果列表",
              (("query", "搜索关键词"),)),
]


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex(CORPUS)


def test_known_rankings(index: ToolIndex) -> None:
    assert index.search_ids("what will the weather be in Paris over the next three days?", 2) == [
        "weather::get_forecast", "weather::get_current_weather"]
    assert index.search_ids("save this text to /tmp/notes.txt as a file", 1) == ["files::write_file"]
    assert index.search_ids("read the file /etc/hosts", 1) == ["files::read_file"]


def test_stemmed_plural_finds_the_singular_and_camel_case_name_matches(index: ToolIndex) -> None:
    assert index.search_ids("I need new captchas", 1) == ["captcha::generate_captcha"]
    assert index.search_ids("generate captcha", 1) == ["captcha::generate_captcha"]


def test_chinese_query_finds_the_chinese_description(index: ToolIndex) -> None:
    assert index.search_ids("用必应搜索关键词", 1) == ["cn::bing_search"]


def test_empty_description_is_searchable_by_name(index: ToolIndex) -> None:
    assert index.search_ids("list things", 1) == ["blank"]


def test_hits_carry_scores_best_first_and_ranks(index: ToolIndex) -> None:
    hits = index.search("weather forecast for Paris", 3)
    assert [h.rank for h in hits] == [1, 2]  # only two tools share a word with the message
    assert hits[0].score >= hits[1].score
    assert hits[0].name == "get_forecast" and hits[0].tool is None


def test_k_bounds_and_unmatched_queries(index: ToolIndex) -> None:
    assert index.search("weather", 0) == []
    assert set(index.search_ids("weather", 100)) == {"weather::get_forecast", "weather::get_current_weather"}
    assert index.search("zzzz qqqq", 3) == []  # nothing matches: nothing returned, not k tools scored 0
    assert index.search("", 3) == [] and index.search("  \n ", 3) == []
    assert index.search("the 3 of 7", 3) == []  # stop words and bare numbers are no match
    assert not index.matches("zzzz qqqq").any()
    with pytest.raises(TypeError):
        index.search(None, 3)  # type: ignore[arg-type]


def test_empty_index_answers_nothing() -> None:
    assert ToolIndex([]).search("anything", 5) == []


def test_duplicate_names_and_ids_are_both_kept() -> None:
    index = ToolIndex.from_definitions([
        {"name": "search", "description": "Search the web for pages", "inputSchema": {"type": "object"}},
        {"name": "search", "description": "Search the web for images", "inputSchema": {"type": "object"}},
    ])
    assert [e.id for e in index.entries] == ["search", "search#2"]
    assert index.search_ids("find images on the web", 1) == ["search#2"]
    twice = ToolIndex([CORPUS[0], CORPUS[0]])
    assert [e.id for e in twice.entries] == ["weather::get_forecast", "weather::get_forecast#2"]


def test_identical_definitions_are_collapsed_in_results() -> None:
    mirrored = [CORPUS[0], ToolEntry("mirror::get_forecast", CORPUS[0].name, CORPUS[0].description,
                                     CORPUS[0].parameters, group="mirror"), *CORPUS[1:]]
    assert ToolIndex(mirrored).search_ids("weather forecast", 2) == [
        "weather::get_forecast", "weather::get_current_weather"]
    assert ToolIndex(mirrored, collapse_duplicates=False).search_ids("weather forecast", 2)[1] == \
        "mirror::get_forecast"


def test_definitions_in_all_three_formats() -> None:
    params = {"type": "object", "properties": {"ticker": {"type": "string", "description": "Stock symbol"}}}
    index = ToolIndex.from_definitions([
        {"name": "quote", "description": "Latest price", "inputSchema": params},
        {"type": "function", "function": {"name": "fx", "description": "Currency rates", "parameters": {}}},
        {"name": "news", "description": "Headlines", "input_schema": {"type": "object"}},
    ], group="markets")
    assert index.search_ids("price for the ticker symbol AAPL", 1) == ["markets::quote"]
    assert index.search_ids("currency rates", 1) == ["markets::fx"]
    with pytest.raises(ValueError, match="name"):
        ToolIndex.from_definitions([{"description": "no name"}])


def test_prerequisite_is_inferred_from_a_shared_handle_and_pulled_in() -> None:
    entries = [
        ToolEntry("GetUserToken", "GetUserToken", "Get the user token by username and password.",
                  (("username", ""), ("password", ""))),
        ToolEntry("AddAlarm", "AddAlarm", "Set an alarm at a time.", (("token", "User's token."), ("time", ""))),
        ToolEntry("AddAgenda", "AddAgenda", "Add an agenda item.", (("token", "User's token."), ("content", ""))),
        ToolEntry("DeleteAlarm", "DeleteAlarm", "Delete an alarm.", (("token", "User's token."), ("time", ""))),
        ToolEntry("Calculator", "Calculator", "Evaluate a formula.", (("formula", ""),)),
    ]
    linked = {e.id: e.requires for e in infer_requires(entries)}
    assert linked["AddAlarm"] == ("GetUserToken",)
    assert linked["Calculator"] == () and linked["GetUserToken"] == ()
    hits = ToolIndex(entries).search("set an alarm for 9 am", 2)
    assert [(h.id, h.via) for h in hits] == [("AddAlarm", "match"), ("GetUserToken", "requires")]
    plain = ToolIndex(entries, infer_prerequisites=False).search_ids("set an alarm for 9 am", 2)
    assert plain[0] == "AddAlarm" and plain[1] != "GetUserToken"


def test_declared_requires_are_kept_and_unknown_ones_ignored() -> None:
    entries = [ToolEntry("a", "book_flight", "Book a flight", requires=("login", "missing")),
               ToolEntry("login", "login", "Log in")]
    assert ToolIndex(entries).search_ids("book a flight", 2) == ["a", "login"]


def test_requires_declared_on_tools_and_definitions(wholesaler: object) -> None:
    from toolproof import Toolset

    assert isinstance(wholesaler, Toolset)
    index = ToolIndex.from_tools(wholesaler, requires={"cancel_order": ["get_order_status"]})
    assert index.search_ids("cancel my order", 2) == ["cancel_order", "get_order_status"]
    defs = [{"name": "deploy", "description": "Deploy the app"}, {"name": "login", "description": "Sign in"}]
    plain = ToolIndex.from_definitions(defs, group="ops", requires={"ops::deploy": ["ops::login"]})
    assert [(h.id, h.via) for h in plain.search("deploy the app", 2)] == [("ops::deploy", "match"),
                                                                        ("ops::login", "requires")]


def test_usage_history_brings_in_the_step_the_message_never_names() -> None:
    history = UsageHistory([
        Usage("Summarise the news and save it to /root/md/news.md", ("files::write_file",), key="1"),
        Usage("Weather for Rome next week", ("weather::get_forecast",), key="2"),
    ])
    message = "Summarise the weather forecast for Oslo and save it to /root/md/oslo.md"
    plain = ToolIndex(CORPUS).search_ids(message, 2)
    assert "files::write_file" not in plain
    with_history = ToolIndex(CORPUS, history=history, history_weight=1.0)
    assert "files::write_file" in with_history.search_ids(message, 2)
    assert "files::write_file" not in with_history.search_ids(message, 2, exclude_history="1")


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=500), st.integers(min_value=-3, max_value=20))
def test_any_message_and_k_give_a_bounded_ranked_answer(index: ToolIndex, message: str, k: int) -> None:
    hits = index.search(message, k)
    matched = index.matches(message)
    assert len(hits) == max(0, min(k, int(matched.sum()) if message.strip() else 0))
    assert len({h.id for h in hits}) == len(hits)
    ids = [e.id for e in index.entries]
    assert all(matched[ids.index(h.id)] for h in hits if h.via == "match")  # nothing that shares nothing


def test_huge_message_is_fine(index: ToolIndex) -> None:
    assert index.search_ids("weather " * 50_000, 1) == ["weather::get_current_weather"] or \
        index.search_ids("weather " * 50_000, 1) == ["weather::get_forecast"]
