# The same gates CI runs (.ci/run -> deploy/test.sh -> deploy/check.sh), one at a time.
#   make lint       ruff check, ruff format --check, import contracts, migrations
#   make typecheck  mypy (django-stubs; the files listed in pyproject.toml [tool.mypy])
#   make check      all static gates
#   make test-fast  the fast tier: in-process tests (the loop tier included), in seconds, Docker out of reach
#   make test-db    the db tier: tests against the real Postgres/Redis or a process of their own, no Docker
#   make test       the whole suite, exactly as CI runs it (static gates first)
#   make durations  the whole suite, recording the seconds each file took in tests/durations.json, which
#                   orders a parallel run's files longest first (tests/schedule.py); commit it when it moved
#   Tiers are pytest markers set on every test from what it uses (tests/tiers.py); the other two are
#   `-m docker` (sandboxes, workers) and `-m browser` (Chromium): .venv/bin/pytest -m docker tests/engine
#   make schema     regenerate var/openapi.yaml and the web app's API types (frontend/src/api/schema.d.ts);
#                   run it after changing any endpoint, and commit schema.d.ts (tests/api/test_schema_shapes.py)
.PHONY: lint typecheck check test-fast test-db test durations format schema

# Where the fast and db tiers look for Docker: nowhere, so a test that reaches for it fails instead of
# passing on a machine that happens to run it (tests/conftest.py does the same around each fast test).
NO_DOCKER = DOCKER_HOST=unix:///nonexistent/docker.sock
PYTEST = .venv/bin/python -m pytest

lint:
	./deploy/check.sh lint format imports migrations

typecheck:
	./deploy/check.sh types

check:
	./deploy/check.sh

format:
	.venv/bin/ruff check --fix . && .venv/bin/ruff format .

test-fast:
	$(NO_DOCKER) $(PYTEST) -q -m fast

test-db:
	$(NO_DOCKER) $(PYTEST) -q -m "db and not docker and not browser"

test:
	./deploy/test.sh

durations:
	HANGAR_TEST_DURATIONS_OUT=tests/durations.json ./deploy/test.sh

schema:
	mkdir -p var
	.venv/bin/python manage.py spectacular --file var/openapi.yaml
	cd frontend && node_modules/.bin/openapi-typescript ../var/openapi.yaml -o src/api/schema.d.ts
