# ruff: noqa: F811  (the fixture imported below is a parameter of the tests)
"""Every number a client sends is bounded: a value too large for what it becomes (a timestamp, a money
amount, a row id, a limit) is a 400 naming its field, never a 500, and nothing is written. Checked two
ways: the concrete requests that used to crash, and a walk over every input serializer of the edges
(REST API, OpenCode's protocol, integrations) that fails on a numeric field with no min or no max."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from rest_framework import serializers

import hangar.api
import hangar.integrations
import hangar.opencode
from hangar.conversations.models import Session
from hangar.conversations.services import session_create
from hangar.usage.models import Budget
from tests.opencode.conftest import base_url, oc  # noqa: F401  (oc: a fixture)

pytestmark = pytest.mark.django_db
HUGE = [1e300, 10**30, -1e300]
ANSWERS = {"hangar.api.pending_views.WaitingSession"}  # nested in a response only: never reads input


@pytest.mark.parametrize("stamp", [*HUGE, -1])
def test_archiving_a_session_at_an_impossible_time_is_a_400_naming_the_field(oc, alice, stamp):
    session = session_create(actor=alice.actor, project=alice.project, title="t")
    response = oc(alice).patch(
        f"{base_url(alice)}/session/{session.pk}", {"time": {"archived": stamp}}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "time" in response.json()["data"]["errors"]  # OpenCode's error shape
    assert Session.objects.get(pk=session.pk).archived_at is None


@pytest.mark.parametrize("value", HUGE)
def test_a_budget_or_an_override_beyond_any_amount_is_a_400_naming_the_field(api, alice, value):
    for field in ("hard_limit", "soft_limit", "project", "member"):
        body = {"scope": "org", "period": "month", "hard_limit": 10.0, field: value}
        response = api(alice).post("/api/orgs/acme/budgets/", body, format="json")
        assert response.status_code == 400, (field, response.content)
        assert field in response.json()["error"]["fields"]
    assert not Budget.objects.filter(org=alice.org).exists()


@pytest.mark.parametrize("value", HUGE)
def test_project_limits_beyond_any_bound_are_a_400_naming_the_field(api, alice, value):
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    for field in (
        "sandbox_cpus",
        "sandbox_memory_mb",
        "sandbox_pids",
        "sandbox_disk_mb",
        "command_timeout_s",
    ):
        response = api(alice).patch(url, {field: value}, format="json")
        assert response.status_code == 400, (field, response.content)
        assert list(response.json()["error"]["fields"]) == [field]


def _input_serializers():
    for package in (hangar.api, hangar.opencode, hangar.integrations):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".migrations" in info.name:
                continue
            module = importlib.import_module(info.name)
            for name, cls in vars(module).items():
                if (
                    inspect.isclass(cls)
                    and issubclass(cls, serializers.Serializer)
                    and cls.__module__ == module.__name__
                    and not name.endswith(("Out", "Output"))  # what the server answers, not what it reads
                    and f"{info.name}.{name}" not in ANSWERS
                ):
                    yield f"{info.name}.{name}", cls


def test_every_number_an_edge_reads_has_a_minimum_and_a_maximum():
    unbounded = []
    for where, cls in _input_serializers():
        for name, field in cls().fields.items():
            numeric = isinstance(
                field, serializers.IntegerField | serializers.FloatField | serializers.DecimalField
            )
            if numeric and not field.read_only and (field.min_value is None or field.max_value is None):
                unbounded.append(f"{where}.{name}")
    assert unbounded == []
