"""Which model a step talks to, with whose key: the foundation's credential store (user over org).

`model_factory` is the seam: tests may swap it for an in-process Model; production builds an
OpenAICompatModel (explicit api_base) or a LiteLLMModel (routed providers) with the resolved credential (decrypted here, in the worker, never stored or logged).
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
        return OpenAICompatModel(provider_id=provider_id, model_id=model_id, api_base=local, api_key="local")
    if credential.api_base:  # OpenAI wire format to an explicit base: no LiteLLM on the step path (openai_compat)
        return OpenAICompatModel(provider_id=provider_id, model_id=model_id, api_base=credential.api_base,
                                 api_key=credential.api_key)
    return LiteLLMModel(provider_id=provider_id, model_id=model_id, api_base=credential.api_base,
                        api_key=credential.api_key)


model_factory: Callable[..., Model] = _litellm_factory


def model_for(*, org_id: int, user_id: int | None, provider_id: str, model_id: str) -> Model:
    return model_factory(org_id=org_id, user_id=user_id, provider_id=provider_id, model_id=model_id)
