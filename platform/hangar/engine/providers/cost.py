"""Cost of a step: LiteLLM's local price map, with per-model overrides from settings.

`settings.HANGAR_MODEL_PRICES` maps "provider/model" or "model" to
{"input": $/token, "output": $/token, "cache_read": $/token}; unknown models cost zero.
One dict lookup per step: LiteLLM's own cost calculator costs milliseconds per call (see litellm_model).
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from hangar.engine.providers import model_table
from hangar.engine.providers.base import Usage


@lru_cache(maxsize=512)
def _price(provider_id: str, model_id: str) -> tuple[float, float, float]:
    overrides = getattr(settings, "HANGAR_MODEL_PRICES", {}) or {}
    for key in (f"{provider_id}/{model_id}", model_id):
        if key in overrides:
            p = overrides[key]
            return (
                float(p.get("input", 0)),
                float(p.get("output", 0)),
                float(p.get("cache_read", p.get("input", 0))),
            )
    table = model_table.model_cost()
    for key in (f"{provider_id}/{model_id}", model_id):
        entry = table.get(key)
        if entry:
            inp = float(entry.get("input_cost_per_token") or 0)
            return (
                inp,
                float(entry.get("output_cost_per_token") or 0),
                float(entry.get("cache_read_input_token_cost") or inp),
            )
    return 0.0, 0.0, 0.0


def step_cost(provider_id: str, model_id: str, usage: Usage) -> float:
    inp, out, cached = _price(provider_id, model_id)
    return usage.input * inp + usage.output * out + usage.cache_read * cached


def call_ceiling(provider_id: str, model_id: str, prompt_tokens: int, max_output: int) -> float:
    """The most a call can cost, what a hard budget reserves before it (hangar.engine.turn.spend): its prompt
    (as estimated, every token at the uncached input price) and the most the model writes in one answer
    (the catalogue's output limit: hangar.engine.providers.catalogue)."""
    inp, out, _cached = _price(provider_id, model_id)
    return prompt_tokens * inp + max_output * out
