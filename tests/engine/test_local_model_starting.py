"""A prompt sent while deploy/up.sh's bundled model is still being built (its first start compiles
llama.cpp for minutes) is answered with "the local model is still starting (about N min)" at once, not
with retries and a bare "connection refused"; health shows the same progress (the web app's badge)."""

import json
import time

import pytest

from hangar.conversations.models import Part
from hangar.conversations.services import session_create
from hangar.engine.services import session_prompt
from hangar.projects import crypto
from hangar.projects.models import ProviderCredential
from tests.engine.conftest import assistant_messages, text_prompt, wait_idle
from tests.opencode.live import free_port

pytestmark = pytest.mark.django_db(transaction=True)


def _status(tmp_path, api_base: str, **fields) -> str:
    path = tmp_path / "local-model.json"
    path.write_text(json.dumps({"api_base": api_base, "log": "var/log/model.log", **fields}))
    return str(path)


def test_a_prompt_before_the_local_model_is_built_ends_with_a_clear_error_and_the_estimate(
    alice, start_worker, sessions_made, tmp_path
):
    api_base = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens yet: the model is compiling
    status = _status(tmp_path, api_base, state="compiling", done=120, total=480, eta=time.time() + 7 * 60 - 5)
    start_worker(env={"HANGAR_LOCAL_MODEL_STATUS": status})
    ProviderCredential.objects.create(
        org=alice.org, user=None, provider="local", api_base=api_base, api_key_encrypted=crypto.encrypt("x")
    )
    session = session_create(
        actor=alice.actor, project=alice.project, model={"providerID": "local", "modelID": "gemma-3-270m"}
    )
    sessions_made.append(session.pk)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hello"))
    session = wait_idle(session)

    error = assistant_messages(session)[-1]["error"]
    message = error["data"]["message"]
    assert message.startswith("The local model is still starting (about 7 min"), message
    assert "compiling llama.cpp (120/480)" in message
    assert not Part.objects.filter(session=session, type="retry").exists()  # said at once, not retried


def test_health_shows_the_local_models_build_progress_until_it_answers(client, settings, alice, tmp_path):
    client.force_login(alice.user)
    port = free_port()
    settings.MODEL_HEALTH_URL = f"http://127.0.0.1:{port}/v1/models"
    settings.HANGAR_LOCAL_MODEL_STATUS = _status(
        tmp_path, f"http://127.0.0.1:{port}/v1", state="compiling", done=3, total=10, eta=time.time() + 150
    )
    model = client.get("/api/health").json()["checks"]["model"]
    assert model == {
        "status": "starting",
        "detail": "compiling llama.cpp (3/10), about 3 min left",
        "minutes_left": 3,
    }

    settings.HANGAR_LOCAL_MODEL_STATUS = _status(tmp_path, "http://127.0.0.1:1/v1", state="failed")
    model = client.get("/api/health").json()["checks"]["model"]
    assert model["status"] == "error" and "var/log/model.log" in model["detail"]
