"""How much a model can read and write: the catalogue behind overflow detection (seed 003 "Provider and
Model Catalog").

Where a model's limits come from, first match wins:
1. the project's `model_limits` ({"provider/model" or "model": {"context": N, "output": N, "input": N?,
   "attachments": bool?}});
2. LiteLLM's local model map (`max_input_tokens`, `max_output_tokens`, `supports_vision`; model_table.py
   reads it without importing LiteLLM);
3. DEFAULT: a 128,000-token context and 32,000 output tokens, what OpenCode assumes of a model it does not
   know and what Hangar's `/config/providers` advertises for the project's model.

A model whose context is unknown to every source gets DEFAULT rather than "no limit": compaction then starts
too early at worst, never too late. `attachments` (images and PDFs are sent to it) is off unless a source
says the model takes them: a text-only model (the bundled local one) would refuse the whole request. Lookups are cached per (provider, model) for the LiteLLM map; the
project's override is a dict lookup on the row the run already holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hangar.engine.providers import model_table

OUTPUT_TOKEN_MAX = 32_000  # OpenCode's cap on the output a step may ask for (ProviderTransform)


@dataclass(frozen=True)
class ModelLimits:
    context: int  # the whole window: prompt + answer
    output: int  # the most the model writes in one answer
    input: int | None = None  # the most it reads, when the provider states it apart from `context`
    source: str = "default"  # project | litellm | default
    attachments: bool = False  # it takes images and PDFs

    @property
    def max_output(self) -> int:
        return min(self.output, OUTPUT_TOKEN_MAX)


DEFAULT = ModelLimits(context=128_000, output=32_000)


def _keys(provider_id: str, model_id: str) -> tuple[str, str]:
    return f"{provider_id}/{model_id}", model_id


def _positive(value: Any) -> int | None:
    return (
        int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None
    )


@lru_cache(maxsize=512)
def _from_litellm(provider_id: str, model_id: str) -> ModelLimits | None:
    table = model_table.model_cost()
    for key in _keys(provider_id, model_id):
        entry = table.get(key)
        if not entry:
            continue
        inp = _positive(entry.get("max_input_tokens"))
        out = _positive(entry.get("max_output_tokens")) or _positive(entry.get("max_tokens"))
        context = inp or _positive(entry.get("max_tokens"))
        if context:
            # LiteLLM's max_input_tokens is the context window for most entries (the answer shares it).
            return ModelLimits(
                context=context,
                output=out or DEFAULT.output,
                source="litellm",
                attachments=bool(entry.get("supports_vision")),
            )
    return None


def from_config(config: Any, provider_id: str, model_id: str) -> ModelLimits | None:
    """The project's override for this model, if it names one (validated when the project was saved)."""
    if not isinstance(config, dict):
        return None
    for key in _keys(provider_id, model_id):
        entry = config.get(key)
        if isinstance(entry, dict) and _positive(entry.get("context")):
            return ModelLimits(
                context=int(entry["context"]),
                output=_positive(entry.get("output")) or min(DEFAULT.output, int(entry["context"]) // 4),
                input=_positive(entry.get("input")),
                source="project",
                attachments=entry.get("attachments") is True,
            )
    return None


def limits_for(project_config: Any, provider_id: str, model_id: str, *, litellm: bool = True) -> ModelLimits:
    """The model's limits (module doc). `litellm=False` in processes that must not import LiteLLM (web)."""
    found = from_config(project_config, provider_id, model_id)
    if found is None and litellm:
        found = _from_litellm(provider_id, model_id)
    return found or DEFAULT
