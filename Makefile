# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# Each creates or refreshes the local venv (.venv) and installs rocketq with what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: run test lint unit integration fault soak bench venv clean spark-venv lowest docs

# constraints.txt pins every version for reproducible runs; pyproject.toml holds the supported ranges.
$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

# The Spark extra (pyspark + pyarrow + matplotlib, ~700 MB) is only needed by the tests and spark_jobs/.
SPARK_STAMP := $(VENV)/.installed-spark
$(SPARK_STAMP): $(STAMP)
	@$(PY) -m pip install -q -c constraints.txt -e '.[dev,spark]'
	@touch $(SPARK_STAMP)

venv: $(STAMP)

# The foreign-client interop tests (tests/compat/test_js_client.py) drive the npm package ali-ons, pinned in
# tests/compat/js/package-lock.json. Installed where node and npm exist; without them those tests skip.
JS_DIR   := tests/compat/js
JS_STAMP := $(JS_DIR)/node_modules/.installed
$(JS_STAMP): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		npm ci --prefix $(JS_DIR) --no-audit --no-fund && touch $(JS_STAMP); \
	else \
		echo "node/npm not found: the ali-ons interop tests (tests/compat/test_js_client.py) will skip"; \
	fi

# Starts a NameServer and a broker on the embedded default store (under run-data/) and shows
# a producer and a consumer exchanging messages; Ctrl-C (or the end of the demo) stops both.
run: $(STAMP)
	$(PY) -m rocketq.demo --data-dir run-data

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	# the blocking facade is what users' type checkers see: strict, and in step with the async classes
	$(VENV)/bin/mypy --strict src/rocketq/client/blocking.py src/rocketq/client/_blocking_classes.py
	$(PY) -m rocketq.client.blocking_gen --check

test: $(SPARK_STAMP) $(JS_STAMP) lint docs
	$(PY) -m pytest $(PYTEST_ARGS)

unit: $(STAMP)
	$(PY) -m pytest tests/unit tests/compat $(PYTEST_ARGS)

integration: $(STAMP)
	$(PY) -m pytest tests/integration $(PYTEST_ARGS)

fault: $(STAMP)
	$(PY) -m pytest tests/fault $(PYTEST_ARGS)

soak: $(STAMP)
	ROCKETQ_SOAK=1 $(PY) -m pytest tests/fault -s $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) bench/remoting.py
	$(PY) bench/store.py

# The user docs and the API reference from the SDK's docstrings (mkdocs.yml), into site/.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build -q

# The unit tests at the lowest supported runtime dependencies (constraints-lowest.txt), in their own venv.
LOWEST := .venv-lowest
lowest:
	@test -x $(LOWEST)/bin/python || $(PYTHON) -m venv $(LOWEST)
	@$(LOWEST)/bin/python -m pip install -q -c constraints-lowest.txt -e . pytest==9.2.0 pytest-asyncio==1.5.0 pytest-timeout==2.4.0 hypothesis==6.170.15
	$(LOWEST)/bin/python -m pytest tests/unit $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(LOWEST) .pytest_cache .mypy_cache .ruff_cache run-data site
