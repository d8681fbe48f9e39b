"""Structured logs carry the request id and the org the request acted in (hangar.logging)."""

import json
import logging

from hangar.logging import get_logger


def test_log_lines_after_an_org_request_carry_request_id_and_org(alice, api, caplog):
    response = api(alice).get("/api/orgs/acme/projects/", HTTP_X_REQUEST_ID="req-123")
    assert response.status_code == 200
    assert response["X-Request-ID"] == "req-123"
    with caplog.at_level(logging.INFO):
        get_logger("hangar.test").info("probe")  # the same thread: the request's context is still bound
    line = json.loads(next(r.getMessage() for r in caplog.records if "probe" in r.getMessage()))
    assert line["request_id"] == "req-123"
    assert line["org"] == "acme"
