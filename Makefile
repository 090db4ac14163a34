# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
# Each creates or refreshes the local venv (.venv) and installs rocketq with what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: run test lint unit unit-pure integration fault soak bench venv clean spark-venv java bench-java lowest lowest-spark docs

# constraints.txt pins every version for reproducible runs; pyproject.toml holds the supported ranges.
$(STAMP): pyproject.toml constraints.txt setup.py src/rocketq/common/record/_crecord.pyx src/rocketq/remoting/protocol/_cheader.pyx src/rocketq/spark/_carrow.pyx src/rocketq/remoting/acl/_csign.pyx src/rocketq/store/_cpull.pyx
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	@$(PY) -c "from rocketq.common.record import accel; print('rocketq record codec:', 'compiled accelerators' if accel.using_extensions() else 'pure Python (the accelerators were not built: no C compiler or Python headers?)')"
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

# The Java compatibility tests (tests/compat/test_java_*.py) run Apache RocketMQ's own client and mqadmin, pinned in
# tests/compat/java/pom.xml. Maven resolves them into tests/compat/java/.m2 (kept between runs, not committed) and
# compiles the small driver program; bounded in time, and a failure names what Maven could not get.
# Without java or mvn those tests skip (.ci/run installs both and sets ROCKETQ_REQUIRE_JAVA, so CI never skips).
JAVA_PROJECT := tests/compat/java
JAVA_STAMP   := $(JAVA_PROJECT)/target/.built
$(JAVA_STAMP): $(JAVA_PROJECT)/pom.xml $(wildcard $(JAVA_PROJECT)/src/main/java/rocketq/compat/*.java)
	@if command -v javac >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
		timeout 1200 mvn -B -q -Dmaven.repo.local=$(CURDIR)/$(JAVA_PROJECT)/.m2 -f $(JAVA_PROJECT)/pom.xml compile \
			&& touch $(JAVA_STAMP) \
			|| { echo "mvn could not build $(JAVA_PROJECT) (exit $$?; 124 = still running after 20 minutes): see the artifacts or plugins it names above"; exit 1; }; \
	else \
		echo "javac/mvn not found: the Java client and mqadmin tests (tests/compat/test_java_*.py) will skip"; \
	fi

# Apache's 5.x NameServer and broker (POP over remoting) for tests/compat/test_simple_consumer_on_apache5.py: a Maven
# project of its own (tests/compat/java5) so the 4.x classpath stays as it is; nothing to compile, only
# target/classpath.txt. Same local repository, same bound, same message when Maven cannot get something.
JAVA5_PROJECT := tests/compat/java5
JAVA5_STAMP   := $(JAVA5_PROJECT)/target/classpath.txt
$(JAVA5_STAMP): $(JAVA5_PROJECT)/pom.xml
	@if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
		timeout 1200 mvn -B -q -Dmaven.repo.local=$(CURDIR)/$(JAVA_PROJECT)/.m2 -f $(JAVA5_PROJECT)/pom.xml generate-resources \
			&& touch $(JAVA5_STAMP) \
			|| { rc=$$?; rm -f $(JAVA5_STAMP); echo "mvn could not resolve $(JAVA5_PROJECT) (exit $$rc; 124 = still running after 20 minutes): see the artifacts it names above"; exit 1; }; \
	else \
		echo "java/mvn not found: the SimpleConsumer tests against Apache's 5.x broker will skip"; \
	fi

java: $(JAVA_STAMP) $(JAVA5_STAMP)

# Apache's benchmark tools (rocketmq-example 4.7.0 with its own rocketmq-client 4.7.0) for bench/apache_benchmark.py;
# not part of `make test`.
BENCH_JAVA_PROJECT := bench/apache_benchmark
$(BENCH_JAVA_PROJECT)/target/classpath.txt: $(BENCH_JAVA_PROJECT)/pom.xml
	timeout 1200 mvn -B -q -Dmaven.repo.local=$(CURDIR)/$(JAVA_PROJECT)/.m2 -f $(BENCH_JAVA_PROJECT)/pom.xml generate-resources \
		&& touch $@ \
		|| { rm -f $@; echo "mvn could not resolve $(BENCH_JAVA_PROJECT): see the artifacts it names above"; exit 1; }

bench-java: $(BENCH_JAVA_PROJECT)/target/classpath.txt

# Starts a NameServer and a broker on the embedded default store (under run-data/) and shows
# a producer and a consumer exchanging messages; Ctrl-C (or the end of the demo) stops both.
run: $(STAMP)
	$(PY) -m rocketq.demo --data-dir run-data

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/lint-imports
	# src strict ([tool.mypy] in pyproject.toml), then the tests, checked but not strict (its tests.* overrides)
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --explicit-package-bases tests
	# the blocking facade is what users' type checkers see: in step with the async classes
	$(PY) -m rocketq.client.blocking_gen --check

# The whole suite with a coverage report of the pytest process (the daemons it starts as subprocesses are
# not measured: [tool.coverage] in pyproject.toml). The floor is the figure the suite reached when it was
# set (86.4 % of src in the whole CI run; a point below it for the paths that only timing decides);
# raise it when coverage grows. The quick targets below run without coverage.
COVERAGE_FLOOR ?= 85
COV_ARGS := --cov --cov-report=term:skip-covered --cov-report=html --cov-fail-under=$(COVERAGE_FLOOR)

test: $(SPARK_STAMP) $(JS_STAMP) $(JAVA_STAMP) $(JAVA5_STAMP) lint docs
	$(PY) -m pytest $(COV_ARGS) $(PYTEST_ARGS)
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

# The user docs and the API reference from the SDK's docstrings (mkdocs.yml), into site/.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build -q

# The unit tests at the lowest supported runtime dependencies (constraints-lowest.txt), in their own venv.
LOWEST := .venv-lowest
LOWEST_TEST_TOOLS := pytest==9.2.0 pytest-asyncio==1.5.0 pytest-timeout==2.4.0 hypothesis==6.170.15
lowest:
	@test -x $(LOWEST)/bin/python || $(PYTHON) -m venv $(LOWEST)
	@$(LOWEST)/bin/python -m pip install -q -c constraints-lowest.txt -e . $(LOWEST_TEST_TOOLS)
	$(LOWEST)/bin/python -m pytest tests/unit $(PYTEST_ARGS)

# The Spark connector at the lowest versions the spark extra allows (constraints-lowest.txt), in a venv of its
# own: its unit tests and the Spark integration tests (Java 17). Not part of `make test`: a second Spark
# install (~700 MB) and several more minutes of Spark.
LOWEST_SPARK := .venv-lowest-spark
lowest-spark:
	@test -x $(LOWEST_SPARK)/bin/python || $(PYTHON) -m venv $(LOWEST_SPARK)
	@$(LOWEST_SPARK)/bin/python -m pip install -q -c constraints-lowest.txt -e '.[spark]' $(LOWEST_TEST_TOOLS)
	$(LOWEST_SPARK)/bin/python -m pytest tests/unit/spark $(PYTEST_ARGS)
	$(LOWEST_SPARK)/bin/python -m pytest -m spark tests/integration/spark $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(LOWEST) $(LOWEST_SPARK) .pytest_cache .mypy_cache .ruff_cache run-data site build htmlcov .coverage .coverage.*
	rm -f $(foreach m,common/record/_crecord remoting/protocol/_cheader spark/_carrow remoting/acl/_csign store/_cpull,src/rocketq/$(m).c src/rocketq/$(m).*.so)
