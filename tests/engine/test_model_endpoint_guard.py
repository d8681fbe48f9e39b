"""A tenant's model endpoint is untrusted: where it may point (hangar.netguard: checked when the
credential is saved and again, on the resolved address, when a connection opens) and how much it may send
(hangar.engine.providers.limits), on every route a step can take: the direct adapter and LiteLLM on both
of its transports. The tests' own servers listen on 127.0.0.1, which tests/envdefaults.py allows; the
refusals here run with the operator's allowance emptied."""

import threading
import uuid
from pathlib import Path

import httpx
import pytest

from hangar.engine.providers.base import ProviderError
from hangar.engine.providers.litellm_model import LiteLLMModel
from hangar.engine.providers.openai_compat import OpenAICompatModel
from hangar.projects.models import ProviderCredential

FORGED = [
    "http://169.254.169.254/latest/meta-data",  # cloud metadata (link-local)
    "http://127.0.0.1:6379",  # Redis on the worker's host
    "http://localhost:5432/v1",  # a name that resolves to loopback
    "http://10.0.0.5/v1",  # private
    "http://172.17.0.1:2375/v1",  # the Docker bridge's gateway (the engine's API port)
    "http://[::1]:8000/v1",
    "http://[::ffff:127.0.0.1]/v1",  # IPv4-mapped loopback
    "http://2130706433/v1",  # 127.0.0.1 written as one number
    "http://0.0.0.0:8000/v1",
    "http://100.100.100.200/v1",  # carrier-grade NAT (Alibaba's metadata address)
]


@pytest.fixture
def strict(settings):
    """The operator allows no private network. The keep-alive connections this process holds were opened
    (and checked) under the tests' loopback allowance, by the direct adapter (this thread's) and by
    LiteLLM's pooled client (an earlier test's call to the same scripted server): they go, so each call
    connects anew, where the guard checks it."""
    from hangar.engine.providers import http as direct_http
    from hangar.engine.providers import litellm_transport

    for conn in direct_http._connections().values():
        conn.close()
    direct_http._connections().clear()
    with litellm_transport._client_lock:
        handler, litellm_transport._handler = litellm_transport._handler, None
        litellm_transport._sdk_clients.clear()
    if handler is not None:
        handler.client.close()
    settings.HANGAR_MODEL_ALLOWED_NETWORKS = []
    return settings


def _set(api, persona, api_base, scope="org"):
    return api(persona).post(
        f"/api/orgs/{persona.org.slug}/credentials/",
        {"provider": "custom", "scope": scope, "api_key": "sk-x", "api_base": api_base},
        format="json",
    )


@pytest.mark.parametrize("api_base", FORGED)
def test_an_api_base_on_loopback_link_local_private_or_docker_addresses_is_refused(
    strict, api, alice, api_base
):
    response = _set(api, alice, api_base)
    assert response.status_code == 400, response.content
    assert "api_base" in response.json()["error"]["fields"]
    assert not ProviderCredential.objects.filter(org=alice.org, provider="custom").exists()


def test_loopback_is_accepted_only_when_the_operator_allows_it(settings, api, alice):
    settings.HANGAR_MODEL_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    assert _set(api, alice, "http://127.0.0.1:8081/v1").status_code == 200
    assert _set(api, alice, "http://169.254.169.254/v1").status_code == 400  # only what is listed


def test_an_api_base_keeps_neither_query_fragment_nor_user_info(strict, api, alice):
    response = _set(api, alice, "https://1.1.1.1/v1/?api-version=2#frag")
    assert response.status_code == 200, response.content
    assert response.json()["api_base"] == "https://1.1.1.1/v1"
    assert _set(api, alice, "https://user:pw@1.1.1.1/v1").status_code == 400


@pytest.fixture(params=["direct", "sdk", "http_handler"])
def route(request, monkeypatch):
    monkeypatch.setenv("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", str(request.param == "http_handler"))
    return OpenAICompatModel if request.param == "direct" else LiteLLMModel


def _model(scripted, route, turns, host="127.0.0.1"):
    script_id = f"guard-{uuid.uuid4().hex[:10]}"
    httpx.post(f"{scripted.url[:-3]}/_scripts", json={"id": script_id, "turns": turns}).raise_for_status()
    base = f"http://{host}:{scripted.port}/v1"
    return route(provider_id="custom", model_id=script_id, api_base=base, api_key="sk-x"), script_id


def _run(model):
    return list(
        model.stream(
            system=["s"], messages=[{"role": "user", "content": "hi"}], tools=[], abort=threading.Event()
        )
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_stored_endpoint_that_now_resolves_to_loopback_is_refused_at_connect_time(
    strict, scripted, route, host
):
    """What DNS rebinding leaves behind: a stored api_base whose name resolves, at call time, to an address
    the operator does not allow. Nothing reaches the server."""
    model, script_id = _model(scripted, route, [[{"text": "secret from the inside"}]], host=host)
    with pytest.raises(ProviderError, match="does not allow"):
        _run(model)
    with pytest.raises(ProviderError, match="does not allow"):
        model.complete(system=["s"], messages=[{"role": "user", "content": "hi"}])
    assert httpx.get(f"{scripted.url[:-3]}/_requests", params={"script": script_id}).json() == []


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def peak_growth_mb(fn) -> float:
    """How far this process's peak resident memory rose above where it stood while `fn` ran."""
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    base = _rss_kb("VmRSS")
    fn()
    return (_rss_kb("VmHWM") - base) / 1024


@pytest.mark.parametrize(
    "kind, what",
    [
        ("text", "a text part"),
        ("reasoning", "a reasoning part"),
        ("tool", "arguments"),
        ("line", "a line of the response"),
        ("event", "one server-sent event"),
        ("alternate", "the response body"),
    ],
)
def test_a_200_mb_answer_ends_the_stream_with_response_too_large_and_memory_stays_flat(
    scripted, route, kind, what
):
    model, _ = _model(scripted, route, [[{"flood": {"bytes": 200_000_000, "kind": kind}}]])
    errors = []

    def consume():
        try:
            _run(model)
        except ProviderError as exc:
            errors.append(exc)

    growth = peak_growth_mb(consume)
    assert errors and "response too large" in errors[0].message and what in errors[0].message, errors
    assert errors[0].retryable is False
    print(f"{kind}: peak RSS growth {growth:.1f} MB")
    assert growth < 80, f"{growth:.0f} MB"


KEY = "sk-live-0123456789abcdefXYZ"


def test_provider_error_text_never_carries_the_key_into_events(scripted, route):
    """Providers echo what they were sent; the error reaches every viewer of the session."""
    script_id = f"redact-{uuid.uuid4().hex[:8]}"
    message = f"Incorrect API key provided: {KEY[:12]}****{KEY[-4:]}; sent Authorization: Bearer {KEY}"
    httpx.post(
        f"{scripted.url[:-3]}/_scripts",
        json={"id": script_id, "turns": [[{"error": 401, "message": message}]] * 2},
    ).raise_for_status()
    model = route(provider_id="custom", model_id=script_id, api_base=scripted.url, api_key=KEY)
    with pytest.raises(ProviderError) as caught:
        _run(model)
    assert KEY[:12] not in caught.value.message and KEY not in caught.value.message, caught.value.message
    assert "Incorrect API key provided" in caught.value.message


@pytest.mark.parametrize(
    "provider", ["ollama", "ollama_chat", "llamafile", "lemonade", "lm_studio", "xinference"]
)
def test_a_named_provider_without_api_base_that_would_default_to_this_host_is_refused(strict, provider):
    """LiteLLM sends these to an address on the worker's own host when no api_base is given (ollama:
    localhost:11434), through a client of its own that no guard is on: refused before any connection,
    like any loopback endpoint. A listener on ollama's default port sees nothing arrive."""
    import socket

    try:
        listener = socket.create_server(("127.0.0.1", 11434))
    except OSError:
        listener = None  # something else has the port: the refusal is still checked
    accepted: list = []

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)
            conn.close()

    if listener is not None:
        threading.Thread(target=accept, daemon=True).start()
    try:
        model = LiteLLMModel(provider_id=provider, model_id="llama3", api_key="sk-x", timeout_s=5)
        with pytest.raises(ProviderError, match="needs an api_base"):
            list(
                model.stream(
                    system=["s"],
                    messages=[{"role": "user", "content": "hi"}],
                    tools=[],
                    abort=threading.Event(),
                )
            )
        assert not accepted, "the call reached this host's port"
    finally:
        if listener is not None:
            listener.close()
