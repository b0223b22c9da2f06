"""Writes potion_reference.json: vectors computed by model2vec itself, for test_retrieval_static.py.

Run in a scratch venv with `pip install model2vec==0.10.0` (not a project dependency):
    python make_potion_reference.py <potion-base-8M folder> potion_reference.json
"""

import json
import sys
from pathlib import Path

import model2vec
from model2vec import StaticModel

TEXTS = [
    "cancel order 42",
    "get weather: Current weather and a 5-day forecast for a city.",
    "how much is 100 dollars in euros",
    "",
    "   ",
    "\u2603\u2603 \U0001f600",
    "查询天气 weather in 北京",
    "Élève naïve café résumé",
    "getUserToken HTTPServer snake_case_name",
    " ".join(["long"] * 300 + ["text with many tokens that goes past the 512 word pieces limit"] * 40),
]


def main() -> None:
    vectors = StaticModel.from_pretrained(sys.argv[1]).encode(TEXTS)
    out = {"model2vec": model2vec.__version__,
           "model": "minishlab/potion-base-8M bf8b056651a2c21b8d2565580b8569da283cab23",
           "texts": TEXTS, "vectors": [[round(float(x), 7) for x in v] for v in vectors]}
    Path(sys.argv[2]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
