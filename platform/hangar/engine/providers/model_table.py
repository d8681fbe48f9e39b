"""LiteLLM's model map (prices, context windows, capabilities per model), read without importing LiteLLM.

It is the JSON file LiteLLM ships and loads itself when told to stay local (LITELLM_LOCAL_MODEL_COST_MAP,
which litellm_transport sets): the same table, in milliseconds. Importing LiteLLM for it cost a worker
seconds of CPU and a large share of its memory even when every call went to an OpenAI-compatible endpoint
directly (HANGAR_DIRECT_OPENAI_COMPAT), which needs nothing else of LiteLLM."""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

FILE = "model_prices_and_context_window_backup.json"


@cache
def model_cost() -> dict[str, Any]:
    """{model key: its entry} (keys such as "gpt-4o" or "anthropic/claude-..."); empty if unreadable."""
    spec = importlib.util.find_spec("litellm")  # finds the package without running its __init__
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / FILE
        if path.is_file():
            table = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(table, dict):
                return {}
            table.pop("fallback_generalizations", None)  # rules, not a model: LiteLLM takes it out too
            return table
    return {}
