# The same gates CI runs (.ci/run -> deploy/test.sh -> deploy/check.sh), one at a time.
#   make lint       ruff check, ruff format --check, import contracts, migrations
#   make typecheck  mypy (django-stubs; the files listed in pyproject.toml [tool.mypy])
#   make check      all static gates
#   make test-fast  static gates, then the tests that need neither Docker nor a model server
#   make test       the whole suite, exactly as CI runs it
.PHONY: lint typecheck check test-fast test format

# Tests against Postgres and Redis only (no sandbox container, no scripted model server).
FAST_TESTS ?= tests/accounts tests/audit tests/projects tests/conversations tests/api tests/test_layering.py

lint:
	./deploy/check.sh lint format imports migrations

typecheck:
	./deploy/check.sh types

check:
	./deploy/check.sh

format:
	.venv/bin/ruff check --fix . && .venv/bin/ruff format .

test-fast: check
	HANGAR_CHECK=0 ./deploy/test.sh $(FAST_TESTS) -q

test:
	./deploy/test.sh
