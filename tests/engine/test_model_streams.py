"""Reading an OpenAI-compatible api_base's SSE stream, over real HTTP, on every route a step can take: the
direct adapter (OpenAICompatModel on hangar.engine.providers.http, the default) and LiteLLMModel's raw-SSE
route on both of LiteLLM's transports (the OpenAI SDK; LiteLLM's own HTTP handler, its
EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER flag).

The scripted server plays well-formed answers; malformed wire bytes come from a canned SSE server here
(the scripted server only ever writes valid chunks)."""

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from hangar.engine.providers.base import ProviderError
from hangar.engine.providers.litellm_model import LiteLLMModel, warm_up
from hangar.engine.providers.openai_compat import OpenAICompatModel

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}


@pytest.fixture(params=["direct", "sdk", "http_handler"])
def transport(request, monkeypatch):
    monkeypatch.setenv("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", str(request.param == "http_handler"))
    # Every test here must read the provider's bytes itself: falling back to LiteLLM's wrapper fails it.
    monkeypatch.setattr(
        LiteLLMModel, "_events", lambda *a: pytest.fail("fell back to LiteLLM's stream wrapper")
    )
    return request.param


def model_class(transport: str):
    return OpenAICompatModel if transport == "direct" else LiteLLMModel


@pytest.fixture
def scripted_model(scripted, transport):
    def make(turns):
        script_id = f"raw-{uuid.uuid4().hex[:10]}"
        httpx.post(
            f"http://127.0.0.1:{scripted.port}/_scripts", json={"id": script_id, "turns": turns}
        ).raise_for_status()
        model = model_class(transport)(
            provider_id="scripted", model_id=script_id, api_base=scripted.url, api_key="sk-test"
        )
        model.requests = lambda: httpx.get(
            f"http://127.0.0.1:{scripted.port}/_requests", params={"script": script_id}
        ).json()
        return model

    return make


class _Canned(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.peers.setdefault(request["model"], []).append(self.client_address)
        body = self.server.bodies[request["model"]].encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def canned_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    server.daemon_threads, server.bodies, server.peers = True, {}, {}
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def canned(canned_server, transport):
    """A model whose provider answers with exactly these SSE bytes."""

    def make(body: str):
        model_id = f"canned-{uuid.uuid4().hex[:8]}"
        canned_server.bodies[model_id] = body
        model = model_class(transport)(
            provider_id="canned",
            model_id=model_id,
            api_key="sk-test",
            api_base=f"http://127.0.0.1:{canned_server.server_address[1]}/v1",
        )
        model.peers = lambda: canned_server.peers.get(model_id, [])
        return model

    return make


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> str:
    payload = {"id": "x", "object": "chat.completion.chunk", "model": "m", **extra}
    if delta is not None or finish is not None:
        payload["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return f"data: {json.dumps(payload)}\n\n"


def events(model, tools=(BASH,), messages=None, abort=None):
    return list(
        model.stream(
            system=["be brief"],
            messages=messages or [{"role": "user", "content": "go"}],
            tools=list(tools),
            abort=abort or threading.Event(),
        )
    )


def test_reasoning_text_parallel_tool_call_pieces_and_usage_come_through(scripted_model):
    m = scripted_model(
        [
            [
                {"reasoning": "let me think"},
                {"text": "two commands"},
                {
                    "tool_calls": [
                        {"name": "bash", "id": "c1", "arguments": {"command": "ls -la"}},
                        {"name": "bash", "id": "c2", "arguments": {"command": "pwd"}},
                    ]
                },
                {
                    "usage": {
                        "prompt_tokens": 120,
                        "completion_tokens": 30,
                        "prompt_tokens_details": {"cached_tokens": 20},
                        "completion_tokens_details": {"reasoning_tokens": 7},
                    }
                },
            ]
        ]
    )
    out = events(m)
    kinds = [e.type for e in out]
    assert kinds[:2] == ["reasoning-start", "reasoning-delta"] and "reasoning-end" in kinds
    assert "".join(e.text for e in out if e.type == "reasoning-delta") == "let me think"
    assert "".join(e.text for e in out if e.type == "text-delta") == "two commands"
    deltas = [e for e in out if e.type == "tool-input-delta"]
    assert {e.id for e in deltas} == {"c1", "c2"} and len(deltas) > 2  # arguments arrived in pieces
    calls = [(e.id, e.name, json.loads(e.arguments)) for e in out if e.type == "tool-call"]
    assert calls == [("c1", "bash", {"command": "ls -la"}), ("c2", "bash", {"command": "pwd"})]
    finish = out[-1]
    assert finish.type == "finish-step" and finish.finish == "tool-calls"
    usage = finish.usage
    assert (usage.input, usage.output, usage.reasoning, usage.cache_read) == (100, 30, 7, 20)


def test_plain_tools_and_a_history_of_tool_calls_reach_the_provider_as_sent(scripted_model):
    m = scripted_model([[{"text": "done"}]])
    history = [
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "content": "a.py\n"},
    ]
    out = events(m, messages=history)
    assert out[-1].finish == "stop"
    sent = m.requests()[-1]
    assert sent["tools"] == [BASH]
    assert sent["messages"] == [{"role": "system", "content": "be brief"}, *history]
    assert "tool_choice" not in sent and sent["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("transport", ["sdk", "http_handler"], indirect=True)
def test_a_tool_whose_regex_python_cannot_compile_is_left_to_litellm_which_drops_the_regex(scripted_model):
    letters = {
        "type": "function",
        "function": {
            "name": "tag",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string", "pattern": "^\\p{L}+$"}},
            },
        },
    }
    m = scripted_model([[{"text": "ok"}]])
    events(m, tools=[BASH, letters])
    sent = m.requests()[-1]["tools"]
    assert sent[0] == BASH and sent[1]["function"]["parameters"]["properties"]["name"] == {"type": "string"}


def test_abort_closes_a_hung_raw_stream_within_a_second(scripted_model):
    warm_up()  # the clock times the abort, not LiteLLM's first load (a worker warms up as it starts)
    abort = threading.Event()
    threading.Timer(0.5, abort.set).start()
    started = time.monotonic()
    out = events(scripted_model([[{"text": "partial"}, {"hang": 30}]]), abort=abort)
    assert time.monotonic() - started < 1.5
    assert "finish-step" not in [e.type for e in out]


def test_sse_framing_comments_event_fields_split_data_and_a_missing_done_are_handled(canned):
    body = (
        ": keep-alive\n\n"
        "event: message\nid: 1\n"
        + chunk({"role": "assistant", "content": "Hel"})
        + 'data:{"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": null}]}\n\n'
        'data: {"choices": [{"index": 0, "delta": {"reasoning": "hm"},\ndata: "finish_reason": "stop"}]}\n\n'
        + chunk(usage={"prompt_tokens": 9, "completion_tokens": 2})
    )  # the body ends without [DONE]
    out = events(canned(body), tools=())
    assert "".join(e.text for e in out if e.type == "text-delta") == "Hello"
    assert [e.text for e in out if e.type == "reasoning-delta"] == ["hm"]
    assert out[-1].type == "finish-step" and out[-1].finish == "stop"
    assert (out[-1].usage.input, out[-1].usage.output) == (9, 2)


@pytest.mark.parametrize(
    "line, reason",
    [
        ('data: {"choices": [{"index": 0, "delta": {"content": "x"\n\n', "not JSON"),
        ("data: [1, 2]\n\n", "a chunk is list, not an object"),
        ('data: {"choices": {"0": {}}}\n\n', "choices is dict, not a list"),
        ('data: {"choices": ["text"]}\n\n', "choices is not a list of objects"),
        ('data: {"choices": [{"delta": "hello"}]}\n\n', "delta is str, not an object"),
        ('data: {"choices": [{"delta": {"content": 42}}]}\n\n', "content is int, not a string"),
        (
            'data: {"choices": [{"delta": {"tool_calls": {"index": 0}}}]}\n\n',
            "tool_calls is dict, not a list",
        ),
        (
            'data: {"choices": [{"delta": {"tool_calls": [{"index": "0", "function": {}}]}}]}\n\n',
            "is not {index: int",
        ),
        (
            'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": {"a": 1}}}]}}]}\n\n',
            "tool call arguments is dict",
        ),
        ('data: {"usage": 12}\n\n', "usage is int, not an object"),
    ],
)
def test_a_malformed_chunk_is_a_provider_error_naming_what_is_wrong(canned, line, reason):
    body = chunk({"role": "assistant", "content": "partial "}) + line + chunk({}, "stop") + "data: [DONE]\n\n"
    with pytest.raises(ProviderError) as raised:
        events(canned(body), tools=())
    error = raised.value
    assert "malformed stream chunk from the provider" in error.message and reason in error.message
    assert not error.retryable and error.status is None


def test_an_error_event_mid_stream_is_a_provider_error_with_its_code(canned):
    body = (
        chunk({"content": "par"})
        + 'data: {"error": {"message": "upstream overloaded", "code": 529}}\n\n'
        + "data: [DONE]\n\n"
    )
    with pytest.raises(ProviderError) as raised:
        events(canned(body), tools=())
    assert (
        raised.value.message == "upstream overloaded"
        and raised.value.status == 529
        and raised.value.retryable
    )


def test_consecutive_calls_reuse_one_keep_alive_connection(canned):
    """The body is read past `[DONE]` to its end: a response closed early costs its connection, and
    against a real provider every step would pay a new TCP + TLS handshake."""
    m = canned(
        chunk({"content": "hi"}, "stop")
        + chunk(usage={"prompt_tokens": 1, "completion_tokens": 1})
        + "data: [DONE]\n\n"
    )
    for _ in range(3):
        assert events(m, tools=())[-1].type == "finish-step"
    assert len(m.peers()) == 3 and len(set(m.peers())) == 1
