"""Hangar's event frames become OpenCode events that fit OpenCode's own schemas."""

from hangar.opencode.translate import server_connected, sse, to_opencode
from tests.opencode.conftest import assert_matches, response_schema

EVENT = response_schema("/event", "get")
SES, MSG, PRT = "ses_1", "msg_1", "prt_1"
TEXT = {"id": PRT, "sessionID": SES, "messageID": MSG, "type": "text", "text": "hi"}


def translated(type_, payload, **extra):
    events = to_opencode({"seq": 1, "type": type_, "payload": payload, "session": SES, **extra})
    for event in events:
        assert_matches(event, EVENT)
    return events


def test_server_connected_is_an_opencode_event():
    assert_matches(server_connected(), EVENT)
    assert sse(server_connected()).startswith(b'data: {"id":"evt_')


def test_part_updates_gain_session_id_and_time():
    [event] = translated("message.part.updated", {"part": TEXT})
    assert event["properties"]["sessionID"] == SES and isinstance(event["properties"]["time"], int)


def test_an_ephemeral_delta_becomes_message_part_delta():
    [event] = translated("message.part.updated", {"part": TEXT, "delta": "!"}, ephemeral=True)
    assert event["type"] == "message.part.delta"
    assert event["properties"] == {
        "sessionID": SES,
        "messageID": MSG,
        "partID": PRT,
        "field": "text",
        "delta": "!",
    }


def test_a_stored_part_update_with_a_delta_keeps_the_part_and_drops_the_delta():
    [event] = translated("message.part.updated", {"part": TEXT, "delta": "!"})
    assert event["type"] == "message.part.updated" and "delta" not in event["properties"]


def test_status_idle_permission_and_todo_events_pass_through():
    assert (
        translated("session.status", {"sessionID": SES, "status": {"type": "busy"}})[0]["type"]
        == "session.status"
    )
    assert translated("session.idle", {"sessionID": SES})[0]["type"] == "session.idle"
    asked = {
        "id": "per_1",
        "sessionID": SES,
        "permission": "bash",
        "patterns": ["ls"],
        "metadata": {},
        "always": ["ls *"],
    }
    assert translated("permission.asked", asked)[0]["properties"] == asked
    replied = translated("permission.replied", {"sessionID": SES, "requestID": "per_1", "reply": "once"})
    assert replied[0]["properties"]["reply"] == "once"
    assert translated("todo.updated", {"sessionID": SES, "todos": []})[0]["type"] == "todo.updated"


def test_event_types_opencode_does_not_know_are_dropped():
    assert translated("hangar.internal", {"x": 1}) == []


def test_question_events_fit_opencodes_schemas():
    asked = {
        "id": "que_1",
        "sessionID": SES,
        "questions": [
            {"question": "Ship?", "header": "Ship", "options": [{"label": "Yes", "description": ""}]}
        ],
        "tool": {"messageID": MSG, "callID": "call_1"},
    }
    assert translated("question.asked", asked)[0]["properties"] == asked
    replied = {"sessionID": SES, "requestID": "que_1", "answers": [["Yes"]]}
    assert translated("question.replied", replied)[0]["properties"] == replied
    rejected = translated("question.rejected", {"sessionID": SES, "requestID": "que_1"})
    assert rejected[0]["type"] == "question.rejected"


def test_a_session_error_of_hangars_own_kind_becomes_an_opencode_unknown_error():
    budget = {
        "name": "BudgetExceededError",
        "data": {"message": "The org's daily budget is used up", "budget": {}},
    }
    [event] = translated("session.error", {"sessionID": SES, "error": budget})
    assert event["properties"]["error"] == {
        "name": "UnknownError",
        "data": {"message": "The org's daily budget is used up"},
    }
    auth = {"name": "ProviderAuthError", "data": {"providerID": "p", "message": "no credential"}}
    [event] = translated("session.error", {"sessionID": SES, "error": auth})
    assert event["properties"]["error"] == auth  # OpenCode's own kinds pass as they are
