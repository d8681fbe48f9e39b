"""Which model a step talks to, with whose key: the foundation's credential store (user over org).

`model_factory` is the seam: tests may swap it for an in-process Model. Production builds a LiteLLMModel
for every provider (LiteLLM is the platform's one gateway) with the resolved credential (decrypted here,
in the worker, never stored or logged). `HANGAR_DIRECT_OPENAI_COMPAT=1` opts an explicit OpenAI-compatible
api_base into OpenAICompatModel instead: the same request without LiteLLM's and the OpenAI SDK's per-call
transforms (~5 ms less worker CPU per step, measured with bench/agent_step.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from hangar.engine.providers.base import Model, ProviderError


def _litellm_factory(*, org_id: int, user_id: int | None, provider_id: str, model_id: str) -> Model:
    from hangar.engine.providers.litellm_model import LiteLLMModel
    from hangar.engine.providers.openai_compat import OpenAICompatModel
    from hangar.projects.credentials import CredentialNotFound, credential_resolve

    try:
        credential = credential_resolve(org_id=org_id, user_id=user_id, provider=provider_id)
    except CredentialNotFound:
        local = getattr(settings, "HANGAR_LOCAL_MODEL_URL", "")
        if not local:
            raise ProviderError(f"no credential for provider {provider_id!r}: add one in the project settings",
                                name="ProviderAuthError") from None
        credential = None
    api_base = credential.api_base if credential else local
    api_key = credential.api_key if credential else "local"
    if api_base and settings.HANGAR_DIRECT_OPENAI_COMPAT:
        return OpenAICompatModel(provider_id=provider_id, model_id=model_id, api_base=api_base, api_key=api_key)
    return LiteLLMModel(provider_id=provider_id, model_id=model_id, api_base=api_base, api_key=api_key)


model_factory: Callable[..., Model] = _litellm_factory


def model_for(*, org_id: int, user_id: int | None, provider_id: str, model_id: str) -> Model:
    return model_factory(org_id=org_id, user_id=user_id, provider_id=provider_id, model_id=model_id)
