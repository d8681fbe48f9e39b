"""Per-call overhead of the LiteLLM adapter against raw HTTP, all in one run.

    .venv/bin/python bench/llm_call.py [--calls 60] [--messages 4,24] [--baseline HEAD]

One streaming call = what `LiteLLMModel.stream` costs the loop for one step: the request out, every
event of the answer in. All variants talk to the same scripted OpenAI-compatible server (`python -m
scripted_llm`, its own process, zero latency) with the same body: the build agent's tool schemas, a
system prompt, and a conversation of N messages (user, then assistant tool call + tool result pairs).
The answer is a text and a tool call whose arguments arrive in pieces, then a usage chunk.

Variants, run in interleaved rounds so that load on the machine falls on all of them alike:
- raw httpx: the same request with one pooled httpx.Client, SSE lines json-decoded (the floor);
- adapter: LiteLLMModel as it is in the work tree (LiteLLM's default transport, the OpenAI SDK);
- adapter, LiteLLM HTTP handler: the same, with LiteLLM's own env flag
  EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER=True set for those calls only (LiteLLM reads it per call);
- direct: the opt-in OpenAICompatModel (no LiteLLM), for reference;
- baseline (with --baseline REF): litellm_model.py as it is at git REF, loaded beside the current one
  (from a REF that has litellm_transport.py, that transport is the current one).

Median (and p90) of --calls calls per variant. The last line printed is one JSON object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import types

from common import ROOT, Scripted, arguments, emit, summary

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hangar.settings")
FLAG = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"
MODULE = "platform/hangar/engine/providers/litellm_model.py"
TURN = [
    {"text": "I will look at the files first."},
    {"tool_calls": [{"name": "bash", "id": "c1", "arguments": {"command": "ls -la", "description": "List"}}]},
]


def conversation(n: int) -> list[dict]:
    messages = [{"role": "user", "content": "List the files, then read the first one."}]
    i = 0
    while len(messages) + 2 <= n:
        call_id = f"c{i}"
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": f"ls dir{i}"})},
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "content": f"a{i}.py\nb{i}.py\nREADME.md\n"}
        )
        i += 1
    return messages


def baseline_class(ref: str):
    """LiteLLMModel from `ref`, as a module of its own beside the current one (same litellm import)."""
    source = subprocess.run(
        ["git", "show", f"{ref}:{MODULE}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("hangar.engine.providers.litellm_model_baseline")
    module.__file__ = f"{ref}:{MODULE}"
    sys.modules[module.__name__] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module.LiteLLMModel


def variants(scripted: Scripted, script: str, system: list[str], tools: list, baseline_ref: str) -> dict:
    """name -> a function making one streaming call with the given messages (returns the events seen)."""
    import httpx

    from hangar.engine.providers.litellm_model import LiteLLMModel
    from hangar.engine.providers.openai_compat import OpenAICompatModel

    abort = threading.Event()
    http = httpx.Client(timeout=60)

    def adapter(cls, flag: bool = False):
        model = cls(provider_id="scripted", model_id=script, api_base=scripted.url, api_key="sk-bench")

        def run(messages: list[dict]) -> int:
            if flag:
                os.environ[FLAG] = "True"
            try:
                events = list(model.stream(system=system, messages=messages, tools=tools, abort=abort))
            finally:
                os.environ.pop(FLAG, None)
            assert events[-1].type == "finish-step" and any(e.type == "tool-call" for e in events), events[
                -3:
            ]
            return len(events)

        return run

    def raw(messages: list[dict]) -> int:
        body = {
            "model": script,
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": tools,
            "messages": [{"role": "system", "content": text} for text in system] + messages,
        }
        n = 0
        with http.stream(
            "POST",
            f"{scripted.url}/chat/completions",
            json=body,
            headers={"Authorization": "Bearer sk-bench"},
        ) as response:
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    json.loads(line[6:])
                    n += 1
        return n

    out = {
        "raw httpx": raw,
        "adapter": adapter(LiteLLMModel),
        "adapter, LiteLLM HTTP handler": adapter(LiteLLMModel, flag=True),
        "direct (OpenAICompatModel)": adapter(OpenAICompatModel),
    }
    if baseline_ref:
        out[f"baseline ({baseline_ref})"] = adapter(baseline_class(baseline_ref))
    return out


def interleaved(runs: dict, messages: list[dict], calls: int, rounds: int) -> dict[str, list[float]]:
    """Each variant's call times (ms), in `rounds` rounds of calls // rounds calls each, after 5 warm-up calls."""
    for run in runs.values():  # warm-up: imports, pools, caches
        for _ in range(5):
            run(messages)
    times: dict[str, list[float]] = {name: [] for name in runs}
    per_round = max(1, calls // rounds)
    for _ in range(rounds):
        for name, run in runs.items():
            for _ in range(per_round):
                started = time.perf_counter()
                run(messages)
                times[name].append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    args = arguments(
        __doc__,
        ("--calls", {"type": int, "default": 60, "help": "measured calls per variant (default 60)"}),
        ("--rounds", {"type": int, "default": 4, "help": "interleaved rounds the calls are split into"}),
        ("--messages", {"default": "4,24", "help": "conversation lengths to run, comma-separated"}),
        ("--baseline", {"default": "", "help": "a git ref: also measure litellm_model.py as it is there"}),
    )
    import django

    django.setup()
    import httpx

    from hangar.engine.providers.litellm_transport import litellm_module
    from hangar.engine.session.system import prompt_text
    from hangar.engine.tools.registry import get_tools, tool_schemas

    litellm_module()
    tools = tool_schemas(get_tools("build", "bench-model"))
    system = [prompt_text("default")]
    scripted = Scripted()
    script = "bench-llm-call"
    httpx.post(
        f"http://127.0.0.1:{scripted.port}/_scripts", json={"id": script, "loop": True, "turns": [TURN]}
    ).raise_for_status()
    runs = variants(scripted, script, system, tools, args.baseline)
    results: dict = {
        "calls": args.calls,
        "tools": len(tools),
        "system_chars": sum(map(len, system)),
        "baseline": args.baseline or None,
        "by_messages": {},
    }
    for n in [int(x) for x in args.messages.split(",") if x]:
        messages = conversation(n)
        times = interleaved(runs, messages, args.calls, args.rounds)
        figures = {name: summary(values, 0.9) for name, values in times.items()}
        floor = figures["raw httpx"]["median_ms"]
        print(
            f"\n{len(messages) + 1} messages (system + {len(messages)}), {len(tools)} tools, "
            f"{len(times['raw httpx'])} calls each:"
        )
        for name, figure in figures.items():
            over = figure["median_ms"] - floor
            print(
                f"  {name:34s} median {figure['median_ms']:7.2f} ms   p90 {figure['p90_ms']:7.2f} ms"
                f"   over raw {over:+7.2f} ms"
            )
        results["by_messages"][str(len(messages) + 1)] = figures
    scripted.stop()
    emit(results)


if __name__ == "__main__":
    main()
