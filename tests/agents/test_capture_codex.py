"""End to end: the real Codex CLI (npm @openai/codex), headless (`codex exec`), against a loopback
fake Responses API, with Winni's hooks, hook trust and MCP server installed by
`manage.py install_agent_hooks --agent codex` into a temporary HOME."""
import json
import os
import shutil
import subprocess
from io import StringIO

import pytest
from django.core.management import call_command

from agents import install
from contexts import services as contexts
from tests.agent_cli import base_env, run_agent
from tests.fake_openai import FakeOpenAI

pytestmark = [pytest.mark.live, pytest.mark.slow]

MARKER = "CODEX-CONTEXT-51d2: run the linter before committing."


@pytest.fixture
def fake_api():
    fake = FakeOpenAI(tool_name="dewey_get_startup_context")
    yield fake
    fake.stop()


def codex_args(fake_url: str) -> list[str]:
    provider = f'{{name="fake", base_url="{fake_url}/v1", wire_api="responses"}}'
    return ["--json", "--skip-git-repo-check", "-c", "model_provider=fake", "-c", f"model_providers.fake={provider}",
            "-c", "model=fake-model", "-c", 'approval_policy="never"']


def thread_id(stdout: str) -> str:
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "thread.started":
            return event["thread_id"]
    raise AssertionError(f"no thread.started in {stdout[-1000:]}")


def run_codex_session(home, project, fake_api, prompts):
    env = base_env(home)
    first = run_agent("codex", ["exec", *codex_args(fake_api.url), prompts[0]], cwd=project, env=env)
    session = thread_id(first.stdout)
    for prompt in prompts[1:]:
        run_agent("codex", ["exec", "resume", *codex_args(fake_api.url), session, prompt], cwd=project, env=env)
    return session


def test_a_headless_codex_session_is_captured_turn_by_turn(winni_server, live_token, fake_api, agent_session):
    contexts.context_set(name="alpha", content=MARKER, actor="test")
    home, project = agent_session.home, agent_session.project
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('# mine\nmodel_reasoning_effort = "low"\n')
    call_command("install_agent_hooks", "--agent", "codex", "--user", "--url", winni_server.url,
                 "--token", live_token)
    assert (home / ".codex" / "config.toml").read_text().startswith('# mine\nmodel_reasoning_effort = "low"\n')

    session = run_codex_session(home, project, fake_api, agent_session.PROMPTS)

    conversation, rows = agent_session.captured(session=session, source="codex", marker=MARKER)
    assert "/.codex/sessions/" in conversation.metadata["transcript_path"]

    # SessionStart's text reached the model in the first request, before any tool ran.
    first = fake_api.model_requests()[0]
    assert MARKER in json.dumps(first["input"])
    # The Winni MCP tool was offered to the model and its result went back to it.
    outputs = [item for request in fake_api.model_requests() for item in request["input"]
               if isinstance(item, dict) and item.get("type") == "function_call_output"]
    assert outputs and MARKER in json.dumps(outputs[-1])

    # The rollout files this run wrote import into the same session's transcript conversation.
    said = agent_session.imported(agent="codex", conversation=conversation)
    assert [(r, c) for r, c in said if r != "tool"] == [(r, c) for r, c in rows if r != "tool"]
    tools = [json.loads(c) for r, c in said if r == "tool"]
    assert tools[0]["tool_call"] == "dewey_get_startup_context" and MARKER in json.dumps(tools[1])
    if os.environ.get("WINNI_SAVE_CODEX_SAMPLE"):
        shutil.copy(conversation.metadata["transcript_path"], os.environ["WINNI_SAVE_CODEX_SAMPLE"])


def codex_hooks_list(home, cwd) -> list[dict]:
    """Codex's own view of the hooks for `cwd` (app-server `hooks/list`, JSON-RPC over stdio)."""
    from tests.agent_cli import agent_binary

    process = subprocess.Popen([str(agent_binary("codex")), "app-server"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=base_env(home),
                               cwd=cwd)
    try:
        def call(ident, method, params):
            process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n")
            process.stdin.flush()
            for line in process.stdout:
                message = json.loads(line)
                if message.get("id") == ident:
                    return message
            raise AssertionError("codex app-server closed its output")

        call(1, "initialize", {"clientInfo": {"name": "winni-test", "version": "1"}})
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
        return call(2, "hooks/list", {"cwds": [str(cwd)]})["result"]["data"][0]["hooks"]
    finally:
        process.kill()
        process.wait(timeout=30)


def test_codex_trusts_the_hooks_installed_for_the_user_and_for_a_project(tmp_path, monkeypatch):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    monkeypatch.setenv("HOME", str(home))
    for where in (["--user"], ["--project", str(project)]):
        call_command("install_agent_hooks", "--agent", "codex", *where, "--url", "http://127.0.0.1:9",
                     "--token", "winni_x", stdout=StringIO())
    # Codex reads a project's .codex/ only in a project the user trusts (its prompt, or `codex exec --trust`).
    with (home / ".codex" / "config.toml").open("a") as handle:
        handle.write(f'\n[projects."{project}"]\ntrust_level = "trusted"\n')
    hooks = codex_hooks_list(home, project)
    winni = [h for h in hooks if install.is_winni_command(h.get("command"))]
    assert {h["sourcePath"] for h in winni} == {f"{home}/.codex/hooks.json", f"{project}/.codex/hooks.json"}
    assert len(winni) == 10 and {h["trustStatus"] for h in winni} == {"trusted"}
