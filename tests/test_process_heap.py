"""Long-running processes freeze their start-up heap (hangar.heap): a full garbage collection, which holds
the GIL and so stalls every session the process carries, walks only what came after start-up."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _frozen_and_tracked(code: str) -> tuple[int, int]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}/platform:{ROOT}", "DJANGO_SETTINGS_MODULE": "hangar.settings"}
    probe = code + "\nimport gc\nprint(gc.get_freeze_count(), len(gc.get_objects()))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    frozen, tracked = map(int, out.stdout.split()[-2:])
    return frozen, tracked


def test_a_started_worker_leaves_its_start_up_heap_out_of_full_collections():
    frozen, tracked = _frozen_and_tracked(
        "import django; django.setup()\nfrom hangar.engine.tasks import warm_up_worker\nwarm_up_worker()"
    )
    # Django and the engine (LiteLLM only where every call goes through it): measured ~162k objects.
    assert frozen > 100_000
    assert tracked < frozen / 20  # what a full collection still walks


def test_the_web_process_freezes_its_heap_with_every_view_loaded():
    frozen, tracked = _frozen_and_tracked(
        "import hangar.asgi\nimport hangar.api.sessions_views, hangar.opencode.views_stream"
    )
    assert frozen > 100_000  # Django, DRF, Channels and every view: measured ~154k objects
    assert tracked < frozen / 20  # the views were loaded before the freeze, not after
