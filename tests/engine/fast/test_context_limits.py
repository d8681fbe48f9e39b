"""The pieces of the context window that need no loop: overflow errors recognised across providers, the
usable window, the model catalogue's sources, and the project's model_limits checked as they are saved."""

from __future__ import annotations

import pytest

from hangar.engine.providers.catalogue import ModelLimits
from hangar.engine.providers.overflow import is_overflow
from hangar.engine.run.compaction import context_tokens, prunable, usable
from hangar.errors import ValidationError
from hangar.projects.validation import clean_model_limits

pytestmark = pytest.mark.fast


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        "prompt is too long: 210000 tokens > 200000 maximum",  # Anthropic
        "litellm.ContextWindowExceededError: ContextWindowExceededError: OpenAIException - too long",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",  # Gemini
        "the request exceeds the available context size, try increasing it",  # llama.cpp
        "Please reduce the length of the messages or completion.",  # Groq
        "Input is too long for requested model.",  # Bedrock
    ],
)
def test_providers_overflow_messages_are_recognised(message):
    assert is_overflow(message=message, status=400)


def test_overflow_is_recognised_by_code_class_and_status_but_not_from_other_errors():
    assert is_overflow(message="bad request", code="context_length_exceeded")
    assert is_overflow(message="", name="ContextWindowExceededError")
    assert is_overflow(message="", status=413)
    for other in ("Rate limit reached", "Invalid API key", "model not found", "the context manager failed"):
        assert not is_overflow(message=other, status=400)


def test_the_usable_window_keeps_the_output_and_the_reserved_buffer_free():
    assert usable(ModelLimits(context=10_000, output=1_000)) == 8_000
    # Output is capped at 32,000; reserved at 20,000: a 200k window with 64k output → 200k - 32k - 20k.
    assert usable(ModelLimits(context=200_000, output=64_000)) == 148_000
    assert (
        usable(ModelLimits(context=200_000, output=8_000, input=150_000)) == 142_000
    )  # a stated input limit
    assert context_tokens({"input": 10, "output": 5, "cache": {"read": 100, "write": 1}}) == 116
    assert context_tokens({"total": 42, "input": 1}) == 42


@pytest.mark.parametrize(
    "value,field",
    [
        ([], "model_limits"),
        ({"m": {"output": 10}}, "model_limits['m']"),
        ({"m": {"context": 0}}, "model_limits['m'].context"),
        ({"m": {"context": 1000, "output": 2000}}, "model_limits['m'].output"),
        ({"m": {"context": 1000, "ctx": 1}}, "model_limits['m'].ctx"),
        ({"m": {"context": True}}, "model_limits['m'].context"),
        ({"m": {"context": 1000, "attachments": "yes"}}, "model_limits['m'].attachments"),
    ],
)
def test_bad_model_limits_are_refused_naming_the_entry_and_field(value, field):
    with pytest.raises(ValidationError) as refused:
        clean_model_limits(value)
    assert field in refused.value.detail


def test_a_model_takes_attachments_only_where_a_source_says_so():
    from hangar.engine.providers.catalogue import from_config, limits_for

    config = clean_model_limits({"local/vision": {"context": 8000, "attachments": True}})
    assert from_config(config, "local", "vision").attachments is True
    assert limits_for(config, "local", "text-only", litellm=False).attachments is False  # DEFAULT


def test_prune_skips_the_last_two_turns_and_protected_skill_outputs():
    def tool(name: str, size: int) -> dict:
        return {
            "type": "tool",
            "tool": name,
            "state": {"status": "completed", "output": "x" * size, "time": {}},
        }

    big = [tool("bash", 4 * 15_000) for _ in range(5)]  # 15,000 tokens each
    history = [
        ({"role": "user", "id": "u1"}, []),
        ({"role": "assistant", "id": "a1"}, [tool("skill", 4 * 50_000), *big]),
        ({"role": "user", "id": "u2"}, []),
        ({"role": "assistant", "id": "a2"}, [tool("bash", 4 * 90_000)]),  # the previous turn: kept
        ({"role": "user", "id": "u3"}, []),
    ]
    chosen, freed = prunable(history)
    # 75,000 tokens of bash in old turns; the newest 40,000 kept: the third output crosses the line.
    assert [part is big[i] for (_info, part), i in zip(chosen, (2, 1, 0), strict=True)] == [True] * 3
    assert freed == 45_000
    assert prunable(history[:1] + history[2:]) == ([], 0)  # nothing in old turns
