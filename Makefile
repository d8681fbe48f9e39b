# The same gates CI runs (.ci/run -> deploy/test.sh -> deploy/check.sh), one at a time.
#   make lint       ruff check, ruff format --check, import contracts, migrations
#   make typecheck  mypy (django-stubs; the files listed in pyproject.toml [tool.mypy])
#   make check      all static gates
#   make test-fast  static gates, then the tests that need neither Docker nor a model server
#   make test       the whole suite, exactly as CI runs it
#   make schema     regenerate var/openapi.yaml and the web app's API types (frontend/src/api/schema.d.ts);
#                   run it after changing any endpoint, and commit schema.d.ts (tests/api/test_schema_shapes.py)
.PHONY: lint typecheck check test-fast test format schema

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

schema:
	mkdir -p var
	.venv/bin/python manage.py spectacular --file var/openapi.yaml
	cd frontend && node_modules/.bin/openapi-typescript ../var/openapi.yaml -o src/api/schema.d.ts
