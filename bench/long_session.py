"""A long session: does a step get slower as the history grows, and what does compaction itself cost?

    .venv/bin/python bench/long_session.py [--steps 200] [--output 2000] [--context 32000]

One session of `--steps` steps, each a bash call printing `--output` characters, then an answer, run by
`run_session_once` (what the Celery task calls) in this process against the scripted server in its own
process (zero latency; it reports prompt tokens as the request's JSON length / 4), in a real Docker
sandbox provisioned before the clock, persisted in Postgres (database `hangar_bench`). Run twice:

- `compacting`: the project's model_limits give the model a `--context`-token window (output 4,000), so
  the history is compacted whenever a step's reported usage reaches the usable part (seed 003's formula);
- `unbounded`: a 10,000,000-token window, nothing is compacted: the history the model is sent grows with
  every step.

Figures, as medians over buckets of 20 steps: each pass of the loop (Loop.step, timed in this process: wall
and this process's CPU, the worker's own share), and the time between consecutive steps' messages being
created (the scripted server and the sandbox included). A pass that compacts, or only asks for a compaction,
is left out of the buckets; compactions are reported on their own (pass wall and CPU, summary message wall
time, tokens, cost at a priced rate of $3 / $15 per million input / output tokens). The last line printed is
one JSON object.
"""

from __future__ import annotations

import statistics
import uuid

import httpx
from common import Scripted, arguments, bench_env, bench_tenant, emit, log, open_bench_db

BUCKET = 20
PRICE = {"input": 3e-6, "output": 15e-6}
SUMMARY = "**Goal**: print a lot\n**Accomplished**: many steps of output\n**Relevant files**: none"


def load(scripted: Scripted, steps: int, output: int) -> str:
    """`steps` bash calls (each command differs, or the doom-loop guard would ask), then an answer; compaction
    requests are answered with SUMMARY without using a turn, and one counter serves the whole session (a
    compacted history starts with a different first message)."""

    def call(i: int) -> list[dict]:
        command = f"head -c {output} /dev/zero | tr '\\0' x; echo {i}"
        return [
            {
                "tool_calls": [
                    {"name": "bash", "id": f"c{i}", "arguments": {"command": command, "description": "out"}}
                ]
            }
        ]

    script_id = f"long-{uuid.uuid4().hex[:8]}"
    turns = [call(i) for i in range(steps)] + [[{"text": "done"}]]
    body = {"id": script_id, "turns": turns, "title": "Long", "shared": True, "summary": SUMMARY}
    httpx.post(f"http://127.0.0.1:{scripted.port}/_scripts", json=body).raise_for_status()
    return script_id


def instrument() -> list[tuple[float, float, str]]:
    """Time each pass of the loop (Loop.step) in wall and this process's CPU time, marked by what it did:
    a step, a compaction, or only asking for one."""
    import time

    from hangar.engine.run.compaction import ContextWindow
    from hangar.engine.run.loop import Loop

    records: list[tuple[float, float, str]] = []
    kind = ["step"]  # what the pass being timed did (a compaction, or only asking for one, mark it)
    step, compact, overflowing = Loop.step, ContextWindow.compact, ContextWindow.overflowing

    def timed_step(self, *args):  # type: ignore[no-untyped-def]
        kind[0] = "step"
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return step(self, *args)
        finally:
            records.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, kind[0]))

    def marked_compact(self, *args):  # type: ignore[no-untyped-def]
        kind[0] = "compaction"
        return compact(self, *args)

    def marked_overflowing(self, *args):  # type: ignore[no-untyped-def]
        asked = overflowing(self, *args)
        if asked:
            kind[0] = "ask"
        return asked

    Loop.step, ContextWindow.compact, ContextWindow.overflowing = (
        timed_step,
        marked_compact,
        marked_overflowing,
    )
    return records


def system_prefixes(scripted: Scripted, script_id: str) -> list[int]:
    """[turns, distinct leading system texts] of the requests the scripted server received."""
    from hangar.engine.session.system import prompt_text

    sent = httpx.get(f"http://127.0.0.1:{scripted.port}/_requests", params={"script": script_id}).json()
    leads = []
    for body in sent:
        if not body.get("stream"):  # the title's call
            continue
        lead = []
        for message in body["messages"]:
            if message["role"] != "system":
                break
            lead.append(message["content"])
        if lead != [prompt_text("compaction")]:
            leads.append(tuple(lead))
    return [len(leads), len(set(leads))]


def by_bucket(values: list[float]) -> list[float]:
    return [round(statistics.median(values[i : i + BUCKET]), 1) for i in range(0, len(values), BUCKET)]


def run(scripted: Scripted, actor, project, steps: int, output: int, context: int) -> dict:
    from django.conf import settings

    from hangar.conversations.models import ContextEpoch, Message, Session
    from hangar.conversations.services import session_create
    from hangar.engine.run.worker import run_session_once
    from hangar.engine.services import session_prompt
    from hangar.engine.workspace.sandboxes import manager, spec_for
    from hangar.projects.models import Project

    script_id = load(scripted, steps, output)
    settings.HANGAR_MODEL_PRICES = {**settings.HANGAR_MODEL_PRICES, f"scripted/{script_id}": PRICE}
    Project.objects.filter(pk=project.pk).update(
        model_limits={f"scripted/{script_id}": {"context": context, "output": 4_000}}
    )
    session = session_create(
        actor=actor, project=project, model={"providerID": "scripted", "modelID": script_id}
    )
    manager().get_or_create(spec_for(session)).close()
    session_prompt(actor=actor, session=session, parts=[{"type": "text", "text": "print a lot"}])
    records = instrument()
    run_session_once(session.pk)
    messages = [m.data for m in Message.objects.filter(session=session, role="assistant").order_by("id")]
    epochs = ContextEpoch.objects.filter(session=session).count()
    manager().destroy(session.pk)
    Session.objects.filter(pk=session.pk).delete()

    steps_data = [m for m in messages if not m.get("summary")]
    summaries = [m for m in messages if m.get("summary")]
    if len(steps_data) != steps + 1 or steps_data[-1].get("finish") != "stop":
        raise RuntimeError(f"the session did not finish its {steps} steps: {len(steps_data)} step messages")
    spans = [(s["time"]["created"], s["time"]["completed"]) for s in summaries]
    intervals = []  # (step index, ms) of steps whose interval holds no compaction
    for index in range(1, len(steps_data)):
        start, end = steps_data[index - 1]["time"]["created"], steps_data[index]["time"]["created"]
        if not any(start <= created <= end for created, _ in spans):
            intervals.append((index, end - start))
    buckets = []
    for first in range(1, len(steps_data), BUCKET):
        values = [ms for i, ms in intervals if first <= i < first + BUCKET]
        if values:
            buckets.append(round(statistics.median(values), 1))
    prompts = [s["tokens"]["input"] + s["tokens"]["cache"]["read"] for s in steps_data]
    passes = [r for r in records if r[2] == "step"]
    compactions = [r for r in records if r[2] == "compaction"]
    return {
        "context": context,
        "loop_step_wall_ms_by_20_steps": by_bucket([r[0] for r in passes]),
        "loop_step_cpu_ms_by_20_steps": by_bucket([r[1] for r in passes]),
        "compaction_pass_wall_cpu_ms": [[round(w, 1), round(c, 1)] for w, c, _ in compactions],
        "step_ms_median_by_20_steps": buckets,
        "last_over_first_bucket": round(buckets[-1] / buckets[0], 2) if buckets and buckets[0] else None,
        "prompt_tokens_first_last_max": [prompts[0], prompts[-1], max(prompts)],
        "compactions": len(summaries),
        # The system texts each turn led with (a compaction's own call left out): one baseline per epoch,
        # byte for byte, is what lets a provider's prompt cache hit (hangar.engine.turn.system_context).
        "turns_distinct_system_prefixes_epochs": [*system_prefixes(scripted, script_id), epochs],
        "compaction_ms": [c - s for s, c in spans],
        "compaction_tokens_in_out": [[s["tokens"]["input"], s["tokens"]["output"]] for s in summaries],
        "compaction_cost_usd": round(sum(s["cost"] for s in summaries), 6),
        "session_cost_usd": round(sum(m["cost"] for m in messages), 6),
    }


def main() -> None:
    args = arguments(
        __doc__,
        ("--steps", {"type": int, "default": 200}),
        ("--output", {"type": int, "default": 2000}),
        ("--context", {"type": int, "default": 32_000}),
    )
    open_bench_db(bench_env(HANGAR_SANDBOX_POOL="0"))
    from hangar.engine.providers.litellm_model import warm_up

    scripted = Scripted()
    try:
        actor, project = bench_tenant(scripted.url, "long")
        warm_up()
        results = {}
        for name, context in (("compacting", args.context), ("unbounded", 10_000_000)):
            log(f"{name}: {args.steps} steps, context {context}")
            results[name] = run(scripted, actor, project, args.steps, args.output, context)
            log(results[name])
    finally:
        scripted.stop()
    emit({"steps": args.steps, "output_chars_per_step": args.output, **results})


if __name__ == "__main__":
    main()
