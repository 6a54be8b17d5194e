"""Tool calls a person can read (issue #44.3): conversations.toolcalls.tool_line renders a stored tool
call as one line for each common shape, and every display uses it (automatic recall's block,
dewey_search and winni_recall snippets over REST and MCP, the admin's search page and transcript),
while the stored content keeps its JSON."""
import json
from typing import Any

import pytest

from agents import autorecall, capture
from conversations.models import Message
from conversations.toolcalls import tool_line
from tests.support import McpClient

CWD = "/home/dev/shop"


def hook(name: str, tool_input: Any, response: Any = None) -> str:
    return json.dumps({"tool_name": name, "tool_input": tool_input, "tool_response": response})


SHAPES = [
    (hook("Edit", {"file_path": f"{CWD}/src/invoice.py", "old_string": "total = float(x)",
                   "new_string": "total_cents = int(x)", "replace_all": False},
          {"filePath": f"{CWD}/src/invoice.py", "structuredPatch": []}),
     "Edit src/invoice.py: `total = float(x)` → `total_cents = int(x)`"),
    (hook("Bash", {"command": "pytest -q", "description": "run the tests"},
          {"stdout": "..F.\nFAILED tests/test_invoice.py::test_cents\n=== 3 failed, 41 passed in 2.31s ===",
           "stderr": "", "interrupted": False, "isImage": False}),
     "Bash `pytest -q`: 3 failed, 41 passed"),
    (hook("Bash", {"command": "make build"}, {"stdout": "", "stderr": "make: *** [build] Error 2\nexit code 2",
                                              "interrupted": False}),
     "Bash `make build`: exit 2"),
    (hook("Bash", {"command": "git rev-parse HEAD"}, {"stdout": "4f1c2d9\n", "stderr": ""}),
     "Bash `git rev-parse HEAD`: 4f1c2d9"),
    (hook("Read", {"file_path": f"{CWD}/src/invoice.py", "offset": 10, "limit": 51},
          {"type": "text", "file": {"filePath": f"{CWD}/src/invoice.py", "content": "…", "numLines": 51,
                                    "startLine": 10, "totalLines": 240}}),
     "Read src/invoice.py (lines 10–60 of 240)"),
    (hook("MultiEdit", {"file_path": f"{CWD}/src/cart.py", "edits": [
        {"old_string": "price * qty", "new_string": "price_cents * qty"},
        {"old_string": "round(total, 2)", "new_string": "total"}]}),
     "MultiEdit src/cart.py: 2 edits, `price * qty` → `price_cents * qty` …"),
    (hook("Write", {"file_path": f"{CWD}/src/money.py", "content": "CENTS = 100\n\ndef to_cents(x):\n    ...\n"},
          {"type": "create", "filePath": f"{CWD}/src/money.py"}),
     "Write src/money.py: created, 4 lines"),
    (hook("NotebookEdit", {"notebook_path": f"{CWD}/notebooks/report.ipynb", "cell_id": "c7",
                           "new_source": "df['cents'] = (df.amount * 100).astype(int)", "edit_mode": "replace"}),
     "NotebookEdit notebooks/report.ipynb cell c7 (replace): `df['cents'] = (df.amount * 100).astype(int)`"),
    (hook("Grep", {"pattern": "float\\(", "path": f"{CWD}/src", "glob": "*.py", "output_mode": "files_with_matches"},
          {"mode": "files_with_matches", "filenames": ["src/a.py"], "numFiles": 4}),
     "Grep `float\\(` in src (*.py): 4 files"),
    (hook("Glob", {"pattern": "**/*.py", "path": CWD}, {"filenames": [], "numFiles": 12, "truncated": False}),
     "Glob `**/*.py` in .: 12 files"),
    (hook("Task", {"description": "Find every money column", "prompt": "Look through the models…",
                   "subagent_type": "Explore"}),
     "Task (Explore): Find every money column"),
    (hook("WebFetch", {"url": "https://docs.python.org/3/library/decimal.html", "prompt": "rounding modes"},
          {"code": 200, "codeText": "OK", "result": "…"}),
     "WebFetch https://docs.python.org/3/library/decimal.html: 200 OK"),
    (hook("mcp__winni__winni_recall", {"query": "how do we store money", "limit": 5}, {"results": []}),
     "winni_recall (MCP winni) query: `how do we store money`"),
    (hook("Frobnicate", {"level": 3, "target": "staging"}), "Frobnicate target: `staging`"),
    (hook("list_directory", {"dir_path": f"{CWD}/src"}), "list_directory src"),
    (json.dumps({"tool_use": "Bash", "id": "toolu_1", "input": {"command": "git status"}}), "Bash `git status`"),
    (json.dumps({"tool_result": "On branch main\nnothing to commit", "tool_use_id": "toolu_1", "is_error": False}),
     "Tool result: On branch main (+1 line)"),
    (json.dumps({"tool_call": "exec_command", "call_id": "c1", "input": json.dumps({"cmd": "ls -la"})}),
     "exec_command `ls -la`"),
    (json.dumps({"tool": "search_memory", "arguments": {"query": "money"}}), "search_memory query: `money`"),
]


@pytest.mark.parametrize(("content", "line"), SHAPES, ids=[line.split(" ")[0] for _, line in SHAPES])
def test_each_shape_is_one_readable_line(content, line):
    assert tool_line(content, cwd=CWD) == line


def test_paths_outside_the_working_directory_stay_whole_and_lines_are_bounded():
    content = hook("Read", {"file_path": "/etc/hosts"})
    assert tool_line(content, cwd=CWD) == "Read /etc/hosts"
    assert tool_line(hook("Read", {"file_path": f"{CWD}/a.py"})) == f"Read {CWD}/a.py"  # no cwd known
    long = tool_line(hook("Bash", {"command": "echo " + "x" * 5000}, {"stdout": "y" * 5000}), limit=120)
    assert long is not None and len(long) <= 120 and "\n" not in long


def test_a_cut_tool_message_is_still_read_and_other_texts_are_not_tool_calls():
    cut = hook("Bash", {"command": "cat build.log"}, {"stdout": "line\n" * 5000})[:400] + "… [800 more characters]"
    assert tool_line(cut) == "Bash `cat build.log`"
    for text in ("We store money as integer cents.", '{"a": 1}', "", "{not json"):
        assert tool_line(text) is None


# --- the displays ----------------------------------------------------------------------------------

BASH = {"command": "pytest tests/test_invoice.py -q"}
BASH_OUT = {"stdout": "invoice cents rounding mismatch\n3 failed, 41 passed", "stderr": "", "interrupted": False}
PROMPT = "pytest tests/test_invoice.py -q: invoice cents rounding mismatch, 3 failed, 41 passed?"


def captured() -> Message:
    """A session in /home/dev/shop that ran the invoice tests (PostToolUse, as the hook sends it)."""
    base = {"session_id": "tools-1", "cwd": CWD, "transcript_path": "/tmp/t.jsonl"}
    capture.capture_hook_event(payload={**base, "hook_event_name": "UserPromptSubmit",
                                        "prompt": "run the invoice tests"})
    capture.capture_hook_event(payload={**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                        "tool_input": BASH, "tool_response": BASH_OUT, "tool_use_id": "toolu_9"})
    capture.capture_hook_event(payload={**base, "hook_event_name": "PostToolUse", "tool_name": "Edit",
                                        "tool_input": {"file_path": f"{CWD}/src/invoice.py",
                                                       "old_string": "round(total, 2)",
                                                       "new_string": "total_cents"},
                                        "tool_response": {"filePath": f"{CWD}/src/invoice.py"}})
    return Message.objects.get(role="tool", metadata__tool_name="Bash")


@pytest.fixture
def session(db: Any, django_capture_on_commit_callbacks: Any) -> Message:
    with django_capture_on_commit_callbacks(execute=True):
        return captured()


LINE = "Bash `pytest tests/test_invoice.py -q`: 3 failed, 41 passed"


def test_the_stored_content_keeps_the_json(session):
    assert json.loads(session.content)["tool_name"] == "Bash"


def test_automatic_recall_shows_the_tool_call_as_one_line(session):
    out = autorecall.context_for_prompt(prompt=PROMPT, session_id="another", record=False)
    assert session.pk in {item["id"] for item in out["items"]} or str(session.pk) in {i["id"] for i in out["items"]}
    assert LINE in out["text"] and '{"tool_name"' not in out["text"]


def test_search_snippets_over_rest_show_the_line(session, api):
    page = api.get("/api/v1/messages/search/", {"query": "invoice cents rounding"}).json()
    tool_hits = [hit for hit in page["results"] if hit["role"] == "tool"]
    assert tool_hits and LINE in [hit["snippet"] for hit in tool_hits]
    assert all('{"tool_name"' not in hit["snippet"] for hit in page["results"])
    assert any('"tool_name"' in hit["content"] for hit in tool_hits)  # the raw payload stays viewable
    recall = api.get("/api/v1/recall", {"query": "invoice cents rounding", "kinds": "message"}).json()
    assert LINE in [hit["snippet"] for hit in recall["results"]]
    assert all('{"tool_name"' not in hit["snippet"] for hit in recall["results"])


def test_the_admin_shows_lines_in_search_and_transcript_and_keeps_the_json(session, admin_client):
    from django.urls import reverse

    page = admin_client.get("/admin/search/", {"q": "invoice cents rounding"}).content.decode()
    assert "3 failed, 41 passed" in page and "{&quot;tool_name&quot;" not in page
    transcript = admin_client.get(reverse("admin:conversations_conversation_transcript",
                                          args=[session.conversation_id])).content.decode()
    assert "<span class=\"winni-tool-line\">`pytest tests/test_invoice.py -q`: 3 failed, 41 passed</span>" in transcript
    assert "src/invoice.py: `round(total, 2)` → `total_cents`" in transcript
    # The conversation's own page lists its messages as stored: the JSON.
    raw = admin_client.get(reverse("admin:conversations_conversation_change",
                                   args=[session.conversation_id])).content.decode()
    assert "tool_response" in raw


@pytest.fixture
def live_session(transactional_db: Any) -> Message:
    return captured()


@pytest.mark.live
def test_mcp_snippets_show_the_line(live_session, mcp: McpClient):
    found = mcp.call("dewey_search", {"query": "invoice cents rounding"})
    assert LINE in [hit["snippet"] for hit in found["results"] if hit["role"] == "tool"]
    assert all('{"tool_name"' not in hit["snippet"] for hit in found["results"])
    recall = mcp.call("winni_recall", {"query": "invoice cents rounding", "kinds": ["message"], "detail": "full"})
    assert LINE in [hit["snippet"] for hit in recall["results"]]
    rows = mcp.call("winni_recall", {"query": "invoice cents rounding", "kinds": ["message"]})["results"]
    assert LINE in [row["line"] for row in rows]  # the compact row shows the same readable line
    context = mcp.call("winni_context", {"prompt": PROMPT})
    assert LINE in context["text"] and '{"tool_name"' not in context["text"]
