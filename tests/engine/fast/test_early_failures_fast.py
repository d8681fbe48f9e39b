"""A turn that fails before (or instead of) its first step is answered, never left without a word: an
assistant message carrying the error in OpenCode's shape, `session.error`, the session idle, and the
answer a waiting client (OpenCode's `POST /session/{id}/message`: tests/opencode/test_stock_cli.py)
returns. One test per cause."""

from __future__ import annotations

import pytest

from hangar.conversations.models import Event, Message
from hangar.engine.providers.base import ProviderError
from hangar.usage.models import Budget, ModelAllowList
from sandbox.protocol import SandboxUnavailable
from tests.engine.fast.scripted_model import ScriptedModel

pytestmark = [pytest.mark.fast, pytest.mark.django_db]


def session_errors(rig) -> list[dict]:
    rows = Event.objects.filter(session_id=rig.session.pk, type="session.error").order_by("seq")
    return [e.payload["error"] for e in rows]


def the_answer(rig) -> dict:
    """The one assistant message, which must answer the latest prompt, complete."""
    (answer,) = rig.assistants()
    user = Message.objects.filter(session=rig.session, role="user").latest("id")
    assert answer["parentID"] == user.pk and answer["time"]["completed"] >= answer["time"]["created"]
    assert rig.state().status == "idle" and rig.state().lease_owner == ""
    return answer


def test_a_model_without_a_credential_answers_the_prompt_with_a_provider_auth_error(rig):
    rig.prompt("hello")

    def no_credential(**_):
        raise ProviderError("no credential for provider 'scripted'", name="ProviderAuthError")

    rig.run(ScriptedModel([]), resolve_model=no_credential)

    error = the_answer(rig)["error"]
    assert error == {
        "name": "ProviderAuthError",
        "data": {"providerID": "scripted", "message": "no credential for provider 'scripted'"},
    }
    assert session_errors(rig) == [error]


def test_a_sandbox_that_cannot_be_attached_answers_the_prompt_with_the_reason(rig):
    rig.prompt("hello")

    def full(_session):
        raise SandboxUnavailable("organisation sandbox disk budget exhausted: 51200 MB of 51200 MB reserved")

    model = ScriptedModel([[{"text": "never"}]])
    rig.run(model, sandbox_for=full)

    error = the_answer(rig)["error"]
    assert error["name"] == "UnknownError" and set(error["data"]) == {"message"}
    assert "could not be started" in error["data"]["message"]
    assert "disk budget exhausted" in error["data"]["message"]
    assert [e["data"]["message"] for e in session_errors(rig)] == [error["data"]["message"]]
    assert model.requests == []


def test_a_hard_budget_answers_the_prompt_before_any_call(rig, alice):
    Budget.objects.create(org=alice.org, scope="org", period="day", hard_limit=0.0)
    rig.prompt("hello")
    model = ScriptedModel([[{"text": "never"}]])
    rig.run(model)

    error = the_answer(rig)["error"]
    assert error["name"] == "UnknownError" and "budget is used up" in error["data"]["message"]
    (told,) = session_errors(rig)  # Hangar's own event keeps the name and the budget for its clients
    assert told["name"] == "BudgetExceededError" and told["data"]["message"] == error["data"]["message"]
    assert rig.state().status_detail["blocked"] == "budget"
    assert model.requests == []


def test_a_model_off_the_allow_list_answers_the_prompt_before_any_call(rig, alice):
    ModelAllowList.objects.create(org=alice.org, allowed=["scripted/other"])
    rig.prompt("hello")
    model = ScriptedModel([[{"text": "never"}]])
    rig.run(model)

    error = the_answer(rig)["error"]
    assert error["name"] == "UnknownError" and "scripted/fast" in error["data"]["message"]
    assert [e["name"] for e in session_errors(rig)] == ["ModelNotAllowedError"]
    assert model.requests == []


def test_any_cause_carries_its_own_message_the_same_way(rig):
    rig.prompt("hello")
    starting = "The local model is still starting (about 4 min): try again then."

    def not_ready(**_):
        raise ProviderError(starting, name="LocalModelStarting")

    rig.run(ScriptedModel([]), resolve_model=not_ready)

    assert the_answer(rig)["error"] == {"name": "UnknownError", "data": {"message": starting}}
    assert session_errors(rig) == [{"name": "LocalModelStarting", "data": {"message": starting}}]


def test_a_crash_of_the_loop_answers_the_prompt_with_the_error(rig):
    from hangar.engine.run.worker import _crashed

    rig.prompt("hello")
    _crashed(rig.session.pk, RuntimeError("a bug"))

    assert the_answer(rig)["error"] == {"name": "UnknownError", "data": {"message": "a bug"}}
    assert session_errors(rig) == [{"name": "UnknownError", "data": {"message": "a bug"}}]


def test_a_second_prompt_after_a_failure_runs_and_the_error_stays_in_the_history_unsent(rig):
    rig.prompt("hello")

    def no_credential(**_):
        raise ProviderError("no credential for provider 'scripted'", name="ProviderAuthError")

    rig.run(ScriptedModel([]), resolve_model=no_credential)
    rig.prompt("again")
    model = ScriptedModel([[{"text": "hi"}]])
    rig.run(model)

    assert [bool(m.get("error")) for m in rig.assistants()] == [True, False]
    sent = model.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["user", "user"]  # the failed answer is not sent to the model
    assert len(session_errors(rig)) == 1
