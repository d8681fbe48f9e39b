"""The worker's own provider credentials never authenticate a tenant's call. LiteLLM fills in whatever
a call leaves out from the process environment (OPENAI_API_KEY for any OpenAI-compatible api_base,
AWS_* and the instance's role for Bedrock, GOOGLE_APPLICATION_CREDENTIALS for Vertex, ...), so before it
is imported the worker's environment loses every such variable, and boto's instance-metadata lookup is
turned off. Keys reach a call only from the tenant's own credential (hangar.projects.credentials)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_PROVIDER_PREFIX = re.compile(
    r"^(OPENAI|ANTHROPIC|AZURE|AWS|BEDROCK|GEMINI|GOOGLE|VERTEX|VERTEXAI|COHERE|MISTRAL|GROQ|DEEPSEEK|XAI|"
    r"TOGETHER|TOGETHERAI|OPENROUTER|HUGGINGFACE|HF|REPLICATE|FIREWORKS|FIREWORKS_AI|PERPLEXITY|PERPLEXITYAI|"
    r"DATABRICKS|WATSONX|OLLAMA|VOYAGE|CLOUDFLARE|NVIDIA|NVIDIA_NIM|SAMBANOVA|CEREBRAS|DASHSCOPE|MOONSHOT|"
    r"AI21|ANYSCALE|DEEPINFRA|FRIENDLIAI|NLP_CLOUD|ALEPH_ALPHA|BASETEN|PREDIBASE|CLARIFAI|GITHUB|CODESTRAL)_"
)
_SECRET_WORDS = re.compile(r"(API_KEY|APIKEY|ACCESS_KEY|SECRET|TOKEN|CREDENTIALS|PASSWORD)")
_OURS = ("HANGAR_", "DJANGO_", "LITELLM_LOCAL_MODEL_COST_MAP", "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER")


def ambient_names(environ: Mapping[str, str] | None = None) -> list[str]:
    return [
        name
        for name in (os.environ if environ is None else environ)
        if not name.startswith(_OURS) and (_PROVIDER_PREFIX.match(name) or _SECRET_WORDS.search(name))
    ]


def scrub() -> list[str]:
    """Drop the ambient provider credentials from this process's environment; returns their names."""
    names = ambient_names()
    for name in names:
        os.environ.pop(name, None)
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"  # no instance-role credentials for boto (Bedrock)
    return names
