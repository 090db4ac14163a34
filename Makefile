# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# Each creates or refreshes the local venv (.venv) and installs rocketq with what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: run test lint unit unit-pure integration fault soak bench venv clean spark-venv

$(STAMP): pyproject.toml setup.py src/rocketq/common/record/_crecord.pyx
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e '.[dev]'
	@$(PY) -c "from rocketq.common.record import accel; print('rocketq record codec:', 'compiled accelerators' if accel.using_extensions() else 'pure Python (the accelerators were not built: no C compiler or Python headers?)')"
	@touch $(STAMP)

# The Spark extra (pyspark + pyarrow + matplotlib, ~700 MB) is only needed by the tests and spark_jobs/.
SPARK_STAMP := $(VENV)/.installed-spark
$(SPARK_STAMP): $(STAMP)
	@$(PY) -m pip install -q -e '.[dev,spark]'
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
	$(PY) -m rocketq.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

test: $(SPARK_STAMP) $(JS_STAMP) lint
	$(PY) -m pytest $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory unit-pure

unit: $(STAMP)
	$(PY) -m pytest tests/unit tests/compat $(PYTEST_ARGS)

# The unit tests again on the pure-Python record codec (the compiled accelerators switched off).
unit-pure: $(STAMP)
	ROCKETQ_NO_EXTENSIONS=1 $(PY) -m pytest tests/unit -q $(PYTEST_ARGS)

integration: $(STAMP)
	$(PY) -m pytest tests/integration $(PYTEST_ARGS)

fault: $(STAMP)
	$(PY) -m pytest tests/fault $(PYTEST_ARGS)

soak: $(STAMP)
	ROCKETQ_SOAK=1 $(PY) -m pytest tests/fault -s $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) bench/remoting.py
	$(PY) bench/store.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache run-data build
	rm -f src/rocketq/common/record/_crecord.c src/rocketq/common/record/_crecord.*.so
