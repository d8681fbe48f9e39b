"""What a long-running process (worker, web) does once its start-up imports are loaded."""

import gc


def freeze_start_up_heap() -> None:
    """Exempt everything loaded so far from the cyclic garbage collector's full collections.

    Django, DRF, Channels, LiteLLM and the engine leave hundreds of thousands of objects that live as long as
    the process. A full collection walks all of them while holding the GIL: measured 265 ms in a warmed worker
    (419k objects) and 85 ms in the web process (154k), during which every session the process carries stands
    still. Python runs one whenever enough new long-lived objects pile up, which a burst of new runs does: in
    bench/agent_load.py one such pause during the 100 prompts left Celery's consumer (which competes with the
    runs for the GIL) with a backlog it cleared only slowly, and first steps waited 0.4-0.5 s instead of ~0.01 s.
    gc.freeze moves them to a permanent generation; later collections walk only what came after."""
    gc.collect()  # what start-up left as garbage is freed, not frozen
    gc.freeze()
