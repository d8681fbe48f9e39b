"""Which model a step talks to, with whose key: the foundation's credential store (user over org).

`model_factory` is the seam: tests may swap it for an in-process Model. The credential is decrypted here,
in the worker, never stored or logged.

Which adapter: a named provider without a base URL (anthropic/..., gemini/..., openai/...) goes through
LiteLLM (LiteLLMModel), which knows every provider's wire format, auth and errors. A credential with an
explicit OpenAI-compatible `api_base` is streamed by OpenAICompatModel: the wire format is OpenAI's, which
both adapters already parse with the same reader (assemble.openai_sse_events), and LiteLLM would add only
its per-call machinery around the request, which stays even after every cut we could make through its API
(function_setup and its Logging object, get_optional_params, provider resolution, pricing the stream
wrapper; see litellm_model's docstring; bench/llm_call.py prints the cost of each transport). With a worker
streaming many sessions on few cores, that machinery is a share of the machine, not of one call.
`HANGAR_DIRECT_OPENAI_COMPAT=0` sends those endpoints through LiteLLM as well;

the test suite runs a whole multi-step session both ways.
"""

from __future__ import annotations

from typing import Protocol

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
            raise ProviderError(
                f"no credential for provider {provider_id!r}: add one in the project settings",
                name="ProviderAuthError",
            ) from None
        credential = None
    if credential is not None and not credential.api_key and not credential.api_base:
        # A named provider without a key would be authenticated by whatever the worker's environment
        # holds (env keys, a cloud instance role): never a tenant's call.
        raise ProviderError(
            f"the credential for provider {provider_id!r} has no API key: set one in the credential settings",
            name="ProviderAuthError",
        )
    api_base = credential.api_base if credential else local
    api_key = credential.api_key if credential else "local"
    if api_base and settings.HANGAR_DIRECT_OPENAI_COMPAT:
        return OpenAICompatModel(
            provider_id=provider_id, model_id=model_id, api_base=api_base, api_key=api_key
        )
    return LiteLLMModel(provider_id=provider_id, model_id=model_id, api_base=api_base, api_key=api_key)


class ModelResolver(Protocol):
    """What gives a run its model: `model_for`, or a test's scripted model."""

    def __call__(self, *, org_id: int, user_id: int | None, provider_id: str, model_id: str) -> Model: ...


model_factory: ModelResolver = _litellm_factory


def model_for(*, org_id: int, user_id: int | None, provider_id: str, model_id: str) -> Model:
    return model_factory(org_id=org_id, user_id=user_id, provider_id=provider_id, model_id=model_id)
