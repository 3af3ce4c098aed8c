"""The model gateway against fake providers: respx answers at httpx's transport, under litellm.

Every flavour litellm speaks here (the openai SDK for OpenAI-compatible servers, litellm's
own httpx handler for Anthropic and Ollama) goes through httpx, so respx sees each request.
A catch-all route records anything unexpected and sockets are closed, so no test can reach
the network.
"""

import json
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
import respx

from reflect.reflection.gateway import Completion, ProviderError, complete, provider_of

OPENAI_KEY = "sk-test-openai-key-0000000000000000"
ANTHROPIC_KEY = "sk-ant-test-key-0000000000000000"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
LOCAL_URL = "http://127.0.0.1:8000/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OLLAMA_BASE = "http://127.0.0.1:11434"
MESSAGES = [
    {"role": "system", "content": "You write lessons."},
    {"role": "user", "content": "ModuleNotFoundError: No module named 'yaml'"},
]
# litellm's Ollama types trip a pydantic notice on first use; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning")
LESSON = '{"trigger": "pytest fails on import yaml", "guidance": "install pyyaml"}'


def openai_reply(content=LESSON, model="gpt-4o-mini"):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59},
    }


def openai_error(status, message="something went wrong", code=None):
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    return httpx.Response(status, json=body)


@pytest.fixture(autouse=True)
def provider_env(monkeypatch):
    """Fake keys so litellm finds credentials; no base URL or proxy from the host."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE",
                 "OLLAMA_API_BASE", "OLLAMA_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


@pytest.fixture
def api(monkeypatch):
    """``api(method, url)`` adds a respx route; anything else is recorded and fails the test."""

    def no_sockets(*args, **kwargs):
        raise OSError("tests must not open network connections")

    monkeypatch.setattr(socket.socket, "connect", no_sockets)
    unexpected = []

    def refuse(request):
        unexpected.append(f"{request.method} {request.url}")
        return httpx.Response(418)

    with respx.mock(assert_all_called=False) as router:

        def route(method, url):
            # The catch-all must stay last: respx takes the first route that matches.
            router.pop("unexpected", None)
            added = router.route(method=method, url=url)
            router.route(name="unexpected").mock(side_effect=refuse)
            return added

        yield route
    assert not unexpected, f"requests nobody expected: {unexpected}"


def sent(route) -> dict:
    return json.loads(route.calls.last.request.content)


# -- success, per flavour -------------------------------------------------------------


def test_openai_success_with_tokens_cost_and_json_mode(api):
    route = api("POST", OPENAI_URL).respond(json=openai_reply())
    result = complete("gpt-4o-mini", MESSAGES, timeout=7, max_tokens=123, temperature=0.1)
    assert result == Completion(LESSON, 42, 17, result.cost_usd)
    assert result.cost_usd is not None and result.cost_usd > 0
    assert route.call_count == 1
    body = sent(route)
    assert body["messages"] == MESSAGES
    assert body["max_tokens"] == 123 and body["temperature"] == 0.1
    assert body["response_format"] == {"type": "json_object"}
    request = route.calls.last.request
    assert OPENAI_KEY not in request.content.decode()
    assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert float(request.headers["x-stainless-read-timeout"]) == 7  # the per-call timeout


def test_json_mode_can_be_turned_off(api):
    route = api("POST", OPENAI_URL).respond(json=openai_reply())
    complete("gpt-4o-mini", MESSAGES, json_mode=False)
    assert "response_format" not in sent(route)


def test_openai_compatible_server_via_api_base(api):
    route = api("POST", LOCAL_URL).respond(json=openai_reply(model="my-local-model"))
    result = complete(
        "openai/my-local-model", MESSAGES, api_base="http://127.0.0.1:8000/v1", api_key="local-key"
    )
    assert result.text == LESSON
    assert (result.prompt_tokens, result.completion_tokens) == (42, 17)
    assert result.cost_usd is None  # litellm has no price for it: unknown, not an error
    body = sent(route)
    assert body["model"] == "my-local-model" and body["messages"] == MESSAGES
    # An arbitrary server may refuse response_format: not sent unless litellm vouches for it.
    assert "response_format" not in body
    request = route.calls.last.request
    assert request.headers["authorization"] == "Bearer local-key"
    assert "local-key" not in request.content.decode()


def test_anthropic(api):
    route = api("POST", ANTHROPIC_URL).respond(
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-3-5-haiku-20241022",
            "content": [{"type": "text", "text": LESSON}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 30, "output_tokens": 12},
        }
    )
    result = complete("anthropic/claude-3-5-haiku-20241022", MESSAGES, max_tokens=200)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == (LESSON, 30, 12)
    assert route.call_count == 1
    body = sent(route)
    assert body["system"][0]["text"] == MESSAGES[0]["content"]
    assert body["messages"][0]["content"][0]["text"] == MESSAGES[1]["content"]
    assert body["max_tokens"] == 200
    # No JSON-object switch on Anthropic: neither a format nor an emulating tool is sent.
    assert not {"response_format", "output_format", "tools", "tool_choice"} & set(body)
    request = route.calls.last.request
    assert ANTHROPIC_KEY not in request.content.decode()
    assert request.headers["x-api-key"] == ANTHROPIC_KEY


def test_ollama_chat(api):
    route = api("POST", f"{OLLAMA_BASE}/api/chat").respond(
        json={
            "model": "llama3",
            "created_at": "2024-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": LESSON},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 25,
            "eval_count": 9,
        }
    )
    result = complete("ollama_chat/llama3", MESSAGES, api_base=OLLAMA_BASE, max_tokens=99)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == (LESSON, 25, 9)
    body = sent(route)
    assert [m["content"] for m in body["messages"]] == [m["content"] for m in MESSAGES]
    assert body["format"] == "json"  # Ollama's own JSON mode
    assert body["options"]["num_predict"] == 99


def test_ollama_generate(api):
    route = api("POST", f"{OLLAMA_BASE}/api/generate").respond(
        json={
            "model": "llama3",
            "created_at": "2024-01-01T00:00:00Z",
            "response": LESSON,
            "done": True,
            "prompt_eval_count": 25,
            "eval_count": 9,
        }
    )
    result = complete("ollama/llama3", MESSAGES, api_base=OLLAMA_BASE)
    assert json.loads(result.text) == json.loads(LESSON)
    body = sent(route)
    assert MESSAGES[1]["content"] in body["prompt"] and body["format"] == "json"


def test_empty_content_is_a_retryable_error(api):
    api("POST", OPENAI_URL).respond(json=openai_reply(content=""))
    with pytest.raises(ProviderError, match="empty response") as caught:
        complete("gpt-4o-mini", MESSAGES)
    assert caught.value.retryable


# -- failures ---------------------------------------------------------------------------


def fail(model="gpt-4o-mini", **kwargs) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        complete(model, MESSAGES, **kwargs)
    return caught.value


def test_rate_limit_with_retry_after_seconds(api):
    route = api("POST", OPENAI_URL).mock(
        return_value=httpx.Response(429, headers={"Retry-After": "12"}, json={"error": {}})
    )
    error = fail()
    assert error.retryable and error.retry_after == 12.0
    assert route.call_count == 1


def test_rate_limit_with_retry_after_date(api):
    when = datetime.now(UTC) + timedelta(seconds=90)
    headers = {"Retry-After": format_datetime(when, usegmt=True)}
    body = {"type": "error", "error": {"message": "slow down"}}
    route = api("POST", ANTHROPIC_URL).respond(429, headers=headers, json=body)
    error = fail("anthropic/claude-3-5-haiku-20241022")
    assert error.retryable and 80 <= error.retry_after <= 91
    assert route.call_count == 1


def test_rate_limit_without_header(api):
    api("POST", OPENAI_URL).mock(return_value=openai_error(429))
    error = fail()
    assert error.retryable and error.retry_after is None


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_retryable_and_not_retried(api, status):
    route = api("POST", OPENAI_URL).mock(return_value=openai_error(status))
    error = fail()
    assert error.retryable and str(status) in error.reason
    assert route.call_count == 1  # neither litellm nor the openai SDK retried


@pytest.mark.parametrize("exc", [httpx.ReadTimeout, httpx.ConnectTimeout, httpx.ConnectError])
@pytest.mark.parametrize(
    ("model", "url", "base"),
    [("gpt-4o-mini", OPENAI_URL, None),
     ("anthropic/claude-3-5-haiku-20241022", ANTHROPIC_URL, None),
     ("ollama_chat/llama3", f"{OLLAMA_BASE}/api/chat", OLLAMA_BASE)],
)
def test_timeouts_and_connection_errors_are_retryable(api, exc, model, url, base):
    route = api("POST", url).mock(side_effect=exc("boom"))
    error = fail(model, api_base=base)
    assert error.retryable
    assert route.call_count == 1


@pytest.mark.parametrize("status", [401, 403])
def test_bad_credentials_are_final_after_one_request(api, status, capsys):
    key = "sk-proj-wrongwrongwrong1234567890"
    route = api("POST", OPENAI_URL).mock(
        return_value=openai_error(status, f"Incorrect API key provided: {key}")
    )
    error = fail(api_key=key)
    assert not error.retryable
    assert route.call_count == 1  # no hidden retries
    assert key not in error.reason and "API_KEY" in error.reason
    assert capsys.readouterr() == ("", "")  # litellm printed nothing


def test_unknown_model_is_final(api):
    route = api("POST", OPENAI_URL).mock(
        return_value=openai_error(404, "The model `gpt-nope` does not exist", "model_not_found")
    )
    error = fail()
    assert not error.retryable and "REFLECT_MODEL" in error.reason
    assert route.call_count == 1


def test_ollama_unknown_model_is_final(api):
    # For a model missing from its price map litellm asks an Ollama server for the model's
    # details first: OLLAMA_API_BASE or localhost, never the per-call api_base. It sends
    # only the model name and a failure is ignored.
    show = api("POST", "http://localhost:11434/api/show").respond(404)
    chat = api("POST", f"{OLLAMA_BASE}/api/chat").mock(
        return_value=httpx.Response(404, json={"error": "model 'llama9' not found"})
    )
    error = fail("ollama_chat/llama9", api_base=OLLAMA_BASE)
    assert not error.retryable and "llama9" in error.reason
    assert chat.call_count == 1
    assert {call.request.content for call in show.calls} == {b'{"name":"llama9"}'}


def test_bad_request_is_final(api):
    route = api("POST", OPENAI_URL).mock(return_value=openai_error(400, "invalid 'messages'"))
    error = fail()
    assert not error.retryable and "400" in error.reason
    assert route.call_count == 1


def test_context_window_exceeded_is_final(api):
    api("POST", OPENAI_URL).mock(
        return_value=openai_error(
            400,
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 200000 tokens.",
            "context_length_exceeded",
        )
    )
    error = fail()
    assert not error.retryable and "context window" in error.reason


# -- no litellm where it is not needed -----------------------------------------------------


@pytest.mark.parametrize(
    ("model", "provider"),
    [("gpt-4o-mini", "openai"), ("openai/qwen", "openai"), ("o3-mini", "openai"),
     ("claude-3-5-haiku-20241022", "anthropic"), ("anthropic/claude-sonnet-4", "anthropic"),
     ("ollama/llama3", "ollama"), ("ollama_chat/llama3", "ollama"), ("groq/llama3-8b", "groq"),
     (" Mistral/Large ", "mistral"), ("", "unknown")],
)
def test_provider_of(model, provider):
    assert provider_of(model) == provider


def test_importing_the_gateway_does_not_import_litellm():
    code = "import sys, reflect.reflection.gateway; print('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_a_model_string_litellm_cannot_route_is_final_without_a_request(api):
    error = fail("nonsense-model")
    assert not error.retryable and "provider" in error.reason.lower()


@pytest.mark.parametrize(("api_base", "kept"), [
    ("https://bot:Tr0ub4dor-3@llm.example.net/v1?api-key=Zq8vT3xLp9#frag",
     "https://llm.example.net/v1"),
    ("http://127.0.0.1:8765/v1", "http://127.0.0.1:8765/v1"),
    ("http://host:notaport/v1", "unparsable"),
])
def test_the_breaker_names_an_api_base_without_its_credentials(api_base, kept):
    from reflect.reflection.gateway import endpoint

    assert endpoint(api_base) == kept
