"""Both model adapters (LiteLLM; direct OpenAI-compatible) over real HTTP against the scripted server, and the permission rule engine."""

import threading
import time

import httpx
import pytest

from hangar.engine.agents import permissions as perm
from hangar.engine.providers.base import ProviderError
from hangar.engine.providers.litellm_model import LiteLLMModel, warm_up
from hangar.engine.providers.openai_compat import OpenAICompatModel
from hangar.projects import crypto


@pytest.fixture(params=["litellm", "litellm_http_handler", "openai_compat"])
def model(scripted, request, monkeypatch):
    """Each adapter; `litellm_http_handler` is LiteLLMModel with LiteLLM's own transport (our default),
    `litellm` the same with the flag off (the OpenAI SDK transport)."""
    monkeypatch.setenv(
        "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", str(request.param == "litellm_http_handler")
    )
    cls = OpenAICompatModel if request.param == "openai_compat" else LiteLLMModel

    def make(turns):
        script_id = f"p-{time.monotonic_ns()}"
        httpx.post(
            f"http://127.0.0.1:{scripted.port}/_scripts", json={"id": script_id, "turns": turns}
        ).raise_for_status()
        return cls(provider_id="scripted", model_id=script_id, api_base=scripted.url, api_key="sk-test")

    return make


def events(m, tools=(), abort=None):
    return list(
        m.stream(
            system=["be brief"],
            messages=[{"role": "user", "content": "go"}],
            tools=list(tools),
            abort=abort or threading.Event(),
        )
    )


def test_a_streamed_answer_becomes_reasoning_text_tool_call_and_finish_events(model):
    m = model(
        [
            [
                {"reasoning": "let me think"},
                {"text": "hello there"},
                {"tool_calls": [{"name": "bash", "id": "c1", "arguments": {"command": "ls -la"}}]},
                {"usage": {"prompt_tokens": 120, "completion_tokens": 30}},
            ]
        ]
    )
    out = events(m)
    kinds = [e.type for e in out]
    assert kinds[0] == "reasoning-start" and "text-start" in kinds and "tool-input-start" in kinds
    assert "".join(e.text for e in out if e.type == "text-delta") == "hello there"
    assert sum(e.type == "tool-input-delta" for e in out) > 1  # arguments arrived in pieces
    call = next(e for e in out if e.type == "tool-call")
    assert (call.id, call.name, call.arguments) == ("c1", "bash", '{"command": "ls -la"}')
    finish = out[-1]
    assert finish.type == "finish-step" and finish.finish == "tool-calls"
    assert (finish.usage.input, finish.usage.output) == (120, 30)


def test_a_429_is_a_retryable_provider_error_carrying_retry_after(model):
    m = model([[{"error": 429, "headers": {"retry-after-ms": "1500"}, "message": "slow down"}]])
    with pytest.raises(ProviderError) as raised:
        events(m)
    assert raised.value.status == 429 and raised.value.retryable
    assert raised.value.headers["retry-after-ms"] == "1500"


def test_a_400_is_not_retryable(model):
    with pytest.raises(ProviderError) as raised:
        events(model([[{"error": 400, "message": "bad request"}]]))
    assert raised.value.status == 400 and not raised.value.retryable


def test_abort_closes_a_hung_stream_within_a_second(model):
    warm_up()  # the clock times the abort, not LiteLLM's first load (a worker warms up as it starts)
    abort = threading.Event()
    threading.Timer(0.5, abort.set).start()
    started = time.monotonic()
    events(model([[{"text": "partial"}, {"hang": 30}]]), abort=abort)
    assert time.monotonic() - started < 1.5


def test_the_title_agent_gets_a_non_streamed_answer(model, scripted):
    m = model([[{"text": "unused"}]])
    answer = m.complete(
        system=["You are a title generator. You output ONLY a thread title."],
        messages=[{"role": "user", "content": "fix the login bug"}],
    )
    assert answer == "Scripted session"


def test_rules_match_wildcards_and_the_last_match_wins():
    rules = [
        {"permission": "*", "pattern": "*", "action": "allow"},
        {"permission": "bash", "pattern": "rm *", "action": "deny"},
        {"permission": "bash", "pattern": "rm -i *", "action": "ask"},
    ]
    assert perm.evaluate("bash", "ls", rules) == "allow"
    assert perm.evaluate("bash", "rm -rf /", rules) == "deny"
    assert perm.evaluate("bash", "rm -i x", rules) == "ask"
    assert perm.evaluate("edit", "src/a.py", []) == "ask"  # no match: ask


def test_the_defaults_ask_for_env_files_but_not_their_examples():
    assert perm.evaluate("read", "config/.env", perm.DEFAULTS) == "ask"
    assert perm.evaluate("read", ".env.example", perm.DEFAULTS) == "allow"
    assert perm.evaluate("doom_loop", "bash", perm.DEFAULTS) == "ask"


def test_an_org_deny_wins_over_any_later_allow_and_a_fully_denied_tool_is_not_offered():
    allow_all = [{"permission": "*", "pattern": "*", "action": "allow"}]
    policy = [{"permission": "bash", "pattern": "curl *", "action": "deny"}]
    assert perm.decide("bash", ["curl x"], ruleset=allow_all, org_policy=policy) == "deny"
    assert perm.decide("bash", ["ls", "curl y"], ruleset=allow_all, org_policy=policy) == "deny"
    assert perm.decide("bash", ["ls"], ruleset=allow_all, org_policy=policy) == "allow"
    assert perm.disabled_tools(
        ["bash", "write", "read"], [*allow_all, {"permission": "edit", "pattern": "*", "action": "deny"}], []
    ) == {"write"}
    assert perm.from_config({"edit": "deny", "bash": {"git *": "allow"}}) == [
        {"permission": "edit", "pattern": "*", "action": "deny"},
        {"permission": "bash", "pattern": "git *", "action": "allow"},
    ]


@pytest.mark.django_db
def test_an_openai_compatible_base_url_is_streamed_directly_and_a_named_provider_through_litellm(
    alice, settings
):
    from hangar.engine.providers.resolve import model_for
    from hangar.projects.models import ProviderCredential

    ProviderCredential.objects.create(org=alice.org, provider="local", api_base="http://127.0.0.1:9/v1")
    ProviderCredential.objects.create(
        org=alice.org, provider="anthropic", api_key_encrypted=crypto.encrypt("sk-x")
    )
    assert settings.HANGAR_DIRECT_OPENAI_COMPAT  # the default
    assert isinstance(
        model_for(org_id=alice.org.pk, user_id=None, provider_id="local", model_id="m"), OpenAICompatModel
    )
    assert isinstance(
        model_for(org_id=alice.org.pk, user_id=None, provider_id="anthropic", model_id="c"), LiteLLMModel
    )
    settings.HANGAR_DIRECT_OPENAI_COMPAT = False
    assert isinstance(
        model_for(org_id=alice.org.pk, user_id=None, provider_id="local", model_id="m"), LiteLLMModel
    )
