"""Shared personas. alice owns org `acme`; bob is a member of acme; charlie owns org `globex`.
Each has a project and an API token; `api(persona)` returns a DRF client authenticated as them."""

from dataclasses import dataclass

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from hangar.accounts import tokens
from hangar.accounts.actors import Actor
from hangar.accounts.models import ApiToken, Membership, Org, Role, User
from hangar.audit.models import ActorType
from hangar.projects.models import Project
from tests import db_template, password_hashing, sandbox_leftovers, schedule, shared_workers, tiers

password_hashing.install(settings)


@dataclass
class Persona:
    user: User
    org: Org
    membership: Membership
    project: Project
    token: str
    token_row: ApiToken

    @property
    def actor(self) -> Actor:
        return Actor(type=ActorType.USER, org_id=self.org.pk, user=self.user, label=self.user.email)


def make_persona(email: str, org: Org, role: str, project_slug: str) -> Persona:
    user = User.objects.create_user(email, password="pw-" + email)
    membership = Membership.objects.create(org=org, user=user, role=role)
    project, _ = Project.objects.get_or_create(org=org, slug=project_slug, defaults={"name": project_slug})
    raw, prefix = tokens.generate()
    row = ApiToken.objects.create(org=org, user=user, name="test", prefix=prefix, digest=tokens.digest(raw))
    return Persona(user, org, membership, project, raw, row)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """Each process's test database is a copy of the migrated template (tests/db_template.py)."""
    settings.DATABASES["default"].setdefault("TEST", {})["TEMPLATE"] = db_template.ensure()


@pytest.fixture(scope="session")
def process_servers(django_db_setup):
    """Servers this test process keeps across modules (tests/shared_workers.py), stopped before its test
    database is dropped."""
    yield shared_workers.servers
    shared_workers.stop_servers()


@pytest.fixture
def acme(db) -> Org:
    return Org.objects.create(name="Acme", slug="acme")


@pytest.fixture
def globex(db) -> Org:
    return Org.objects.create(name="Globex", slug="globex")


@pytest.fixture
def alice(acme) -> Persona:
    return make_persona("alice@acme.test", acme, Role.OWNER, "rocket")


@pytest.fixture
def bob(acme, alice) -> Persona:
    return make_persona("bob@acme.test", acme, Role.MEMBER, "rocket")


@pytest.fixture
def charlie(globex) -> Persona:
    return make_persona("charlie@globex.test", globex, Role.OWNER, "satellite")


@pytest.fixture
def api():
    def client_for(persona: Persona | None = None) -> APIClient:
        client = APIClient()
        if persona is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {persona.token}")
        return client

    return client_for


def pytest_collection_modifyitems(items):
    """Each test's tier (fast, db, docker, browser) from what it uses: tests/tiers.py; the files longest
    first, for a parallel run's processes to end together: tests/schedule.py."""
    tiers.classify(items)
    schedule.check_groups(items)
    schedule.order(items)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with tests/schedule.py's groups of files kept to one process."""
    if config.getvalue("dist") == "loadfile":
        return schedule.Scheduling(config, log)
    return None


def pytest_runtest_logreport(report):
    schedule.record(report)


def pytest_sessionfinish(session):
    schedule.write(session)
    sandbox_leftovers.remove_all()


@pytest.fixture(autouse=True)
def _shared_workers_only_where_asked(request):
    """A test that asks for no shared worker runs with none consuming the queue (tests/shared_workers.py)."""
    if not shared_workers.FIXTURES & set(request.fixturenames):
        shared_workers.stop_all()


@pytest.fixture(autouse=True)
def _fast_tier_guard(request, monkeypatch):
    """A fast test runs with the Docker engine out of reach, in every run, not only `make test-fast`: one that
    reaches for a sandbox fails here instead of passing on a machine that happens to have Docker."""
    if request.node.get_closest_marker("fast") is not None:
        monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
