"""The bundled local model's start-up, as deploy/local-model.sh reports it (a shared helper: no app imports).

deploy/up.sh serves an offline model when no provider is configured; its first start installs
llama-cpp-python, which compiles llama.cpp for minutes. deploy/local-model.sh (through
deploy/model_progress.py) writes what it is doing to the JSON file HANGAR_LOCAL_MODEL_STATUS names:
`state` (installing | compiling | serving | failed), `api_base`, `log`, and while it builds `done`/`total`
build steps and `eta` (epoch seconds). Health shows it (the web app's readiness badge), and a model call
to that api_base that cannot connect says the model is still starting, with the estimate, instead of a
bare "connection refused". Standard library only at import: deploy/model_progress.py loads this
file by path for up.sh's status line, so the terminal and the web app say the same."""

from __future__ import annotations

import json
import math
import time
from typing import Any

NOT_READY = ("installing", "compiling", "failed")


def status(path: str | None = None) -> dict[str, Any] | None:
    """The report at `path`, default the HANGAR_LOCAL_MODEL_STATUS setting; None if there is none."""
    if path is None:
        from django.conf import settings  # here: deploy/model_progress.py loads this file without Django

        path = getattr(settings, "HANGAR_LOCAL_MODEL_STATUS", "")
    if not path:
        return None
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("state"), str) else None


def minutes_left(data: dict[str, Any], now: float | None = None) -> int | None:
    eta = data.get("eta")
    if not isinstance(eta, (int, float)):
        return None
    return max(1, math.ceil((eta - (time.time() if now is None else now)) / 60))


def activity(data: dict[str, Any]) -> str:
    """What the model is doing, for a person."""
    state, log = data["state"], data.get("log") or "var/log/model.log"
    if state == "failed":
        return f"the local model failed to install (see {log} on the server)"
    if state == "serving":
        return "the local model is loading"
    if state == "compiling" and data.get("total"):
        return f"compiling llama.cpp ({data.get('done', 0)}/{data['total']})"
    return "installing the local model"


def describe(data: dict[str, Any]) -> str:
    """One line for a person: what the model is doing and how long it should take."""
    if data["state"] not in ("installing", "compiling"):
        return activity(data)
    left = minutes_left(data)
    return f"{activity(data)}, {f'about {left} min left' if left else 'a few minutes left'}"


def not_ready_message(api_base: str) -> str | None:
    """What a call to `api_base` that could not connect should say, when it is the bundled model and
    that model is not serving yet; None otherwise (the caller's own error stands)."""
    data = status()
    if data is None or str(data.get("api_base", "")).rstrip("/") != api_base.rstrip("/"):
        return None
    if data["state"] == "failed":
        return f"The local model could not start: {activity(data)}. Configure a provider in the project settings."
    if data["state"] == "serving":
        return (
            "The local model is still starting (loading the model, about 1 min). Send the prompt again then."
        )
    return (
        f"The local model is still starting (about {minutes_left(data) or 'a few'} min: {activity(data)}). "
        "Send the prompt again once it is ready, or configure a provider in the project settings."
    )
