"""The HTTP providers against small real servers speaking each protocol: valid replies, broken JSON
once (one repair retry), broken twice, HTTP errors, timeouts."""
import json

import pytest

from medallions import extractive, llm, schema
from tests.llm_servers import HANG, FakeLLMServer

# Every call is accounted in the database (core.llm: the daily budget, core.models.LLMCall).
pytestmark = pytest.mark.django_db

GOOD = json.dumps({
    "summary": {"high_level": "The store works.", "subsystems": [{"name": "store", "status": "stable"}]},
    "decisions": [{"id": "D-001", "statement": "Use GIN indexes", "rationale": "fast subsets", "confidence": 0.9}],
    "open_questions": [{"id": "Q-001", "question": "Backups?", "priority": "high"}],
    "affordances": {"recommended_entry_points": ["medallions/services.py"]},
})
EVIDENCE = llm.Evidence("We decided to use GIN indexes.", ["user: backups?"], ["medallions/models.py"])


def make(protocol, server, timeout=5.0, **kwargs):
    cls = llm.OpenAICompatibleLLM if protocol == "openai" else llm.AnthropicLLM
    return cls(base_url=server.url, api_key="sk-test", model="test-model", timeout=timeout, **kwargs)


@pytest.fixture
def serve():
    servers = []

    def start(protocol, replies):
        servers.append(FakeLLMServer(protocol, replies))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_generate_speaks_the_protocol(serve, protocol):
    server = serve(protocol, ["```json\n" + GOOD + "\n```"])
    content = make(protocol, server).generate({"graph_nodes": ["repo:w"], "tags": []}, EVIDENCE)
    assert isinstance(content, schema.Content)
    assert content.decisions[0].statement == "Use GIN indexes"
    request = server.requests[0]
    body = request["body"]
    assert body["model"] == "test-model" and body["temperature"] == 0
    if protocol == "openai":
        assert request["path"] == "/chat/completions"
        assert request["headers"]["Authorization"] == "Bearer sk-test"
        assert body["response_format"] == {"type": "json_object"}
        assert body["messages"][0]["role"] == "system" and "JSON Schema" in body["messages"][0]["content"]
        prompt = body["messages"][1]["content"]
    else:
        assert request["path"] == "/v1/messages"
        assert request["headers"]["x-api-key"] == "sk-test"
        assert request["headers"]["anthropic-version"] == "2023-06-01"
        assert "JSON Schema" in body["system"] and body["max_tokens"] > 0
        prompt = body["messages"][0]["content"]
    assert "repo:w" in prompt and "We decided to use GIN indexes." in prompt and "user: backups?" in prompt


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_broken_json_once_gets_one_repair_retry(serve, protocol):
    server = serve(protocol, ['{"summary": {"high_level": "x"', GOOD])
    content = make(protocol, server).generate({"graph_nodes": ["a"], "tags": []}, EVIDENCE)
    assert content.summary.high_level == "The store works."
    assert len(server.requests) == 2
    repair = server.requests[1]["body"]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"summary": {"high_level": "x"'}
    assert "not a valid medallion" in repair[-1]["content"] and "not valid JSON" in repair[-1]["content"]


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_schema_errors_are_fed_back_then_a_clear_failure(serve, protocol):
    bad = json.dumps({"summary": {"high_level": "x"}, "decisions": [{"id": "D", "statement": "s", "confidence": 7}]})
    server = serve(protocol, [bad, "still not json"])
    with pytest.raises(llm.MedallionLLMError) as error:
        make(protocol, server).generate({"graph_nodes": ["a"], "tags": []}, EVIDENCE)
    assert "after one repair retry" in str(error.value) and "no JSON object" in str(error.value)
    assert "decisions[0].confidence" in server.requests[1]["body"]["messages"][-1]["content"]
    assert len(server.requests) == 2


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_timeout_http_error_and_unreachable_are_clear(serve, protocol):
    server = serve(protocol, [HANG, (500, {"error": "boom"}), (200, b"not json at all")])
    with pytest.raises(llm.MedallionLLMError, match="timed out after 0.3 s"):
        make(protocol, server, timeout=0.3).generate({"graph_nodes": ["a"], "tags": []}, EVIDENCE)
    server.release.set()
    with pytest.raises(llm.MedallionLLMError, match="HTTP 500"):
        make(protocol, server).generate({"graph_nodes": ["a"], "tags": []}, EVIDENCE)
    with pytest.raises(llm.MedallionLLMError, match="not its protocol's shape"):
        make(protocol, server).generate({"graph_nodes": ["a"], "tags": []}, EVIDENCE)
    server.stop()
    with pytest.raises(llm.MedallionLLMError, match="unreachable"):
        make(protocol, server, timeout=1).generate({"graph_nodes": ["a"], "tags": []}, EVIDENCE)


def test_update_sends_the_existing_medallion_and_trims_evidence(serve):
    server = serve("openai", [GOOD])
    existing = {"summary": {"high_level": "old state", "subsystems": []}, "decisions": [], "open_questions": [],
                "affordances": {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []}}
    big = llm.Evidence("s" * 100, ["old " * 5000 + "the latest line"], [])
    make("openai", server, max_input_chars=2000, json_mode="schema").update(existing, big)
    body = server.requests[0]["body"]
    prompt = body["messages"][1]["content"]
    assert "old state" in prompt and "the latest line" in prompt and "trimmed" in prompt
    assert len(prompt) < 5000
    assert body["response_format"]["type"] == "json_schema"


def test_json_mode_off_sends_no_response_format(serve):
    server = serve("openai", [GOOD])
    make("openai", server, json_mode="off").generate({"graph_nodes": ["a"], "tags": []}, EVIDENCE)
    assert "response_format" not in server.requests[0]["body"]


def test_provider_from_settings(settings):
    assert isinstance(llm.provider_from_settings(), extractive.ExtractiveLLM)
    settings.WINNI_MEDALLION_LLM_PROVIDER = "anthropic"
    settings.WINNI_MEDALLION_LLM_MODEL = "claude-x"
    provider = llm.provider_from_settings()
    assert isinstance(provider, llm.AnthropicLLM) and provider.base_url == "https://api.anthropic.com"
    settings.WINNI_MEDALLION_LLM_PROVIDER = "openai"
    settings.WINNI_MEDALLION_LLM_BASE_URL = "http://127.0.0.1:11434/v1/"
    provider = llm.provider_from_settings()
    assert isinstance(provider, llm.OpenAICompatibleLLM) and provider.base_url == "http://127.0.0.1:11434/v1"
