# The two commands the README promises. Each installs whatever is missing first.
#   make demo   set up, start the embedded services and run the demo village
#   make test   set up and run the test suite against the real services

.PHONY: setup demo test services-up services-down bench clean

PY := .venv/bin/python

setup:
	@scripts/setup

demo: setup
	@scripts/demo

# Two workers (pytest-xdist), each with embedded services of its own (tests/conftest.py), a
# test file on one worker: most of the suite waits on subprocesses, brokers and databases.
# The files are taken in the order collected, the longest first (tests/conftest.py LONG_FIRST).
# The slowest 30 steps are listed at the end of every run (where the suite's time goes).
TEST_WORKERS ?= 2
test: setup
	@$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30 $(PYTEST_ARGS)

services-up: setup
	@.venv/bin/sewerwatch services up

services-down:
	@.venv/bin/sewerwatch services down

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; BENCH_QUICK=$${BENCH_QUICK:-1} $(PY) $$b || exit 1; done

clean:
	rm -rf .venv *.egg-info .pytest_cache .hypothesis
