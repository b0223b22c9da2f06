"""Tokenisation: identifiers split, stop words out, English stemmed, CJK as characters and bigrams."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolproof.retrieval._text import Tokenizer, split_identifier


def test_identifiers_split_at_case_and_separators() -> None:
    tok = Tokenizer(stem=False)
    assert tok("get_current_stock_price") == ["get", "current", "stock", "price"]
    assert tok("getUserToken") == ["get", "user", "token"]
    assert tok("HTTPServer.listIssues") == ["http", "server", "list", "issues"]
    assert tok("get-weread-rank") == ["get", "weread", "rank"]
    assert split_identifier("AddAgenda") == "Add Agenda"


def test_stemming_meets_plural_and_verb_forms() -> None:
    tok = Tokenizer()
    assert tok("captchas") == tok("captcha")
    assert tok("searching") == tok("search")
    assert tok("the alarms of my phone") == tok("alarm phone")


def test_stop_words_and_single_letters_are_dropped_numbers_kept() -> None:
    assert Tokenizer(stem=False)("Can you please give me a list of the 3 newest files?") == [
        "give", "list", "3", "newest", "files"]


def test_chinese_becomes_characters_and_bigrams() -> None:
    tokens = Tokenizer()("必应搜索")
    assert tokens == ["必", "应", "搜", "索", "必应", "应搜", "搜索"]
    mixed = Tokenizer()("bing_search 使用必应搜索")
    assert mixed[:2] == ["bing", "search"] and "必应" in mixed


def test_empty_and_punctuation_only_text() -> None:
    assert Tokenizer()("") == []
    assert Tokenizer()("?!  ...  ___") == []


@given(st.text(max_size=300))
def test_any_unicode_tokenises_to_strings(text: str) -> None:
    tokens = Tokenizer()(text)
    assert all(isinstance(t, str) and t for t in tokens)
