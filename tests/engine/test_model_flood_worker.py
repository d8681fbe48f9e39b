"""A model endpoint streaming 200 MB at a real worker (Celery, threads, the session's sandbox): the step
ends with "response too large" and the worker's peak resident memory stays flat, on both gateways."""

from pathlib import Path

import pytest

from hangar.conversations.models import Session
from hangar.engine.services import session_prompt
from tests.engine.conftest import assistant_messages, text_prompt, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


@pytest.mark.parametrize("gateway", ["direct", "litellm"])
def test_a_200_mb_answer_leaves_the_worker_memory_flat_and_ends_the_step_too_large(
    alice, script, make_session, start_worker, gateway
):
    worker = start_worker(env={"HANGAR_DIRECT_OPENAI_COMPAT": "1" if gateway == "direct" else "0"})
    warm = make_session(alice, script.load([[{"text": "warm"}]]))
    session_prompt(actor=alice.actor, session=warm, parts=text_prompt("warm up"))
    wait_idle(warm, timeout=120)

    pid = worker.proc.pid
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak (VmHWM) restarts from the current RSS
    before = _status_kb(pid, "VmRSS")
    flood = make_session(alice, script.load([[{"flood": {"bytes": 200_000_000, "kind": "text"}}]]))
    session_prompt(actor=alice.actor, session=flood, parts=text_prompt("say a lot"))
    wait_idle(flood, timeout=240)
    growth_mb = (_status_kb(pid, "VmHWM") - before) / 1024
    print(
        f"{gateway}: worker RSS {before / 1024:.0f} MB, peak growth {growth_mb:.1f} MB during a 200 MB answer"
    )

    error = assistant_messages(Session.objects.get(pk=flood.pk))[-1].get("error") or {}
    assert "response too large" in error.get("data", {}).get("message", ""), error
    assert growth_mb < 64, f"the worker grew {growth_mb:.0f} MB"
