"""A tiny MPNet sentence-transformers folder (hidden 8, 2 layers) with fixed pseudo-random weights.

Imports numpy, safetensors and tokenizers only (not toolproof), so `data/make_mpnet_reference.py` builds the
same folder in a scratch venv with sentence-transformers and torch, and stores what they compute for it in
`data/mpnet_reference.json`; the tests rebuild it and compare without torch. The weights come from `sin`, not
a seeded generator, so they are the same with any numpy.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

MPNET_WORDS = ["weather", "forecast", "city", "file", "write", "read", "stock", "price", "alarm", "set", "##s",
               "the"]
HIDDEN, HEADS, LAYERS, INTER, POSITIONS = 8, 2, 2, 16, 64
#: Texts the tiny model is checked on: padding mixed into batches, distances past the exact buckets (> 8).
TINY_TEXTS = ["the weather forecast", "write the file", "set alarms", "", "price stock " * 20,
              "unknown zebra words", "read the city weather forecast file " * 3]


def _weights(shape: tuple[int, ...], seed: int) -> np.ndarray:
    n = int(np.prod(shape))
    return (0.5 * np.sin(np.arange(n) * 0.7301 + seed * 1.618)).reshape(shape).astype(np.float32)


def build_tiny_mpnet(folder: Path) -> Path:
    """Write the tiny model's sentence-transformers files into `folder` (which must exist); return it."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(["<s>", "<pad>", "</s>", "[UNK]", *MPNET_WORDS])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>", "cls_token": "<s>",
        "sep_token": "</s>", "pad_token": "<pad>", "unk_token": "[UNK]", "model_max_length": POSITIONS - 2}))
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["MPNetModel"], "model_type": "mpnet", "vocab_size": len(vocab), "hidden_size": HIDDEN,
        "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "intermediate_size": INTER,
        "max_position_embeddings": POSITIONS, "relative_attention_num_buckets": 32, "layer_norm_eps": 1e-5,
        "hidden_act": "gelu", "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": POSITIONS - 2}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}))
    seed = iter(range(1000))

    def r(*shape: int) -> np.ndarray:
        return _weights(shape, next(seed))

    w = {"embeddings.word_embeddings.weight": r(len(vocab), HIDDEN),
         "embeddings.position_embeddings.weight": r(POSITIONS, HIDDEN),
         "embeddings.LayerNorm.weight": 1 + r(HIDDEN), "embeddings.LayerNorm.bias": r(HIDDEN),
         "embeddings.position_ids": np.arange(POSITIONS, dtype=np.int64)[None, :],
         "encoder.relative_attention_bias.weight": 2 * r(32, HEADS),
         "pooler.dense.weight": r(HIDDEN, HIDDEN), "pooler.dense.bias": r(HIDDEN)}
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        for name in ("q", "k", "v", "o"):
            w[p + f"attention.attn.{name}.weight"], w[p + f"attention.attn.{name}.bias"] = r(HIDDEN, HIDDEN), r(HIDDEN)
        w[p + "attention.LayerNorm.weight"], w[p + "attention.LayerNorm.bias"] = 1 + r(HIDDEN), r(HIDDEN)
        w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = r(INTER, HIDDEN), r(INTER)
        w[p + "output.dense.weight"], w[p + "output.dense.bias"] = r(HIDDEN, INTER), r(HIDDEN)
        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = 1 + r(HIDDEN), r(HIDDEN)
    save_file(w, str(folder / "model.safetensors"))
    return folder
