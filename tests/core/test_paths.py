"""Paths as the project knows them (core.paths): a checkpoint, file recall and every other thing
derived from a captured path name it relative to the project's root when it is inside it, as given
otherwise, never with an empty name and never failing because of the path's shape (issue #43)."""
import json
from typing import Any

import pytest

from agents import autorecall
from agents.models import Injection
from conversations.models import Message
from core import paths, projects
from medallions import services as medallions
from medallions.models import MedallionJob

ROOT = "/home/me/shop"
SESSION = "5b1f0a52-43aa-4c1e-9d5e-000000000043"
SCOPE = {"graph_nodes": [], "tags": ["repo:shop"]}

# The bad input issue #43 lists, as the project rooted at ROOT should read each path.
BAD_PATHS = [
    ("/home/me/shop/src/../src/invoice.py", "src/invoice.py"),  # `..` inside the project
    ("/home/me/shop/../other/x.py", "/home/me/other/x.py"),  # `..` leading out of it
    ("/home/me/shop-link/src/invoice.py", "/home/me/shop-link/src/invoice.py"),  # a symlink: not followed
    ("/etc/hosts", "/etc/hosts"),  # outside the project
    (ROOT + "/src/" + "d" * 3990 + ".py", "src/" + "d" * 3990 + ".py"),  # 4,000 characters
    ("/home/me/shop/src/invoice.py\x00.txt", "src/invoice.py"),  # NUL: what the system would read
    ("\x00", ""),
    ("/", ""),
    ("", ""),
    (ROOT, ""),  # the root itself names no file
    ("C:\\Users\\me\\shop\\src\\invoice.py", "C:/Users/me/shop/src/invoice.py"),  # root unknown there
    ("C:/Users/me/shop/src/invoice.py", "C:/Users/me/shop/src/invoice.py"),
    ("\\\\server\\share\\x", "//server/share/x"),
    ("~/x", "~/x"),
    ("./src/invoice.py", "src/invoice.py"),
    ("../x.py", "../x.py"),
    ("/home/me/shop/src/caf\udcff.py", "src/caf\ufffd.py"),  # undecodable bytes, as JSON escapes them
    (b"/home/me/shop/src/caf\xff.py", "src/caf\ufffd.py"),
    ("/home/me/shop/src/caf\ufffd.py", "src/caf\ufffd.py"),
    ("/" + "x" * 5000, ""),  # longer than any file system's path
]


@pytest.mark.parametrize(("path", "expected"), BAD_PATHS)
def test_project_path_reads_every_shape(path, expected):
    assert paths.project_path(path, roots=[ROOT]) == expected


def test_a_path_is_read_relative_to_the_deepest_root_and_from_the_working_directory():
    # A worktree inside the main clone: its own root wins.
    assert paths.project_path("/r/.wt/feat/src/a.py", roots=["/r", "/r/.wt/feat"]) == "src/a.py"
    assert paths.project_path("src/a.py", roots=["/r"], cwd="/r/app") == "app/src/a.py"
    assert paths.project_path("src/a.py", cwd="/r/app") == "src/a.py"
    # Windows: either slash, any case.
    assert paths.project_path("c:/users/ME/shop/src/a.py", roots=["C:\\Users\\me\\shop"]) == "src/a.py"
    assert paths.project_path("C:\\Users\\me\\shop\\src\\a.py", cwd="C:\\Users\\me\\shop") == "src/a.py"
    assert paths.project_path("/home/me/shopping/a.py", roots=[ROOT]) == "/home/me/shopping/a.py"


@pytest.mark.parametrize(("path", "area"), [
    ("src/shop/a.py", "src"), ("README.md", paths.TOP_LEVEL), ("/home/me/x.py", "home"),
    ("C:\\Users\\me\\x.py", "Users"), ("\\\\server\\share\\x", paths.TOP_LEVEL), ("~/x/y.py", "x"),
    ("../../lib/z.py", "lib"), ("/", ""), ("C:\\", ""), ("", ""),
])
def test_path_area_never_names_an_anchor(path, area):
    assert paths.path_area(path) == area


# --- the medallion writer --------------------------------------------------------------------------


def tool(name: str, tool_input: dict[str, Any], response: Any = None) -> str:
    """A tool turn as capture stores it (agents.capture._tool_content)."""
    return "tool: " + json.dumps({"tool_name": name, "tool_input": tool_input, "tool_response": response},
                                 ensure_ascii=False)


def subsystems(medallion: Any) -> dict[str, str]:
    return {s["name"]: s["notes"] for s in medallion.document()["summary"]["subsystems"]}


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "expected"), BAD_PATHS)
def test_a_checkpoint_never_fails_on_a_paths_shape(path, expected):
    projects.project_create(name="shop", path=ROOT)
    if isinstance(path, bytes):
        path = path.decode("utf-8", "replace")  # as Node (Claude Code) reads a file name
    transcript = "\n".join([
        "user: fix the rounding in the invoice",
        tool("Read", {"file_path": path}, {"type": "text", "file": {"filePath": path, "content": "x = 1"}}),
        tool("Edit", {"file_path": path, "old_string": "1", "new_string": "2"}),
        f"assistant: I edited {path} and {path}/ again",
    ])
    medallion = medallions.checkpoint_session(scope=SCOPE, evidence={"transcripts": [transcript]})
    document = medallion.document()
    names = list(subsystems(medallion))
    assert all(name.strip() for name in names), names
    assert "home" not in names  # absolute paths under the root are read relative to it
    if expected and not expected.startswith(("/", "~", "C:")):
        assert any(point.startswith(expected[:290]) for point in document["affordances"]["recommended_entry_points"])


@pytest.mark.django_db
def test_without_a_known_root_names_are_still_never_empty():
    transcript = "\n".join(tool("Read", {"file_path": p}) for p in (
        "/home/me/shop/src/invoice.py", "/", "C:\\Users\\me\\shop\\src\\a.py", "\\\\server\\share\\x",
        "~/notes/todo.md", "./tests/test_a.py", "../lib/b.py"))
    medallion = medallions.checkpoint_session(scope={"graph_nodes": ["nowhere"], "tags": []},
                                              evidence={"transcripts": [transcript]})
    names = set(subsystems(medallion))
    assert names == {"home", "Users", paths.TOP_LEVEL, "notes", "tests", "lib"}


@pytest.mark.django_db
def test_the_writer_never_emits_what_the_schema_rejects():
    from medallions.extractive import ExtractiveLLM
    from medallions.llm import Evidence

    existing = {"summary": {"high_level": "", "subsystems": [{"name": "src", "status": "stable", "notes": ""}]},
                "decisions": [], "open_questions": [], "affordances": {}}
    strange = Evidence(
        session_summary="We decided to use \x00 cents because \udcff. TODO: \x00",
        transcripts=["user: " + "/" * 3000, "user: see /" + "a/" * 2500 + "b.py and ///\x00/x and \\\\\\"],
        artefacts=["C:\\ D:/ \\\\s\\t ~/ ./ ../ " + "é" * 5000, "tool: " + "[" * 100_000 + "]" * 100_000,
                   'tool: {"cut": "C:\\\\x\\\\y.py'], roots=["/", "", "C:\\"])
    generated = ExtractiveLLM().generate(SCOPE, strange)
    assert "C:/x/y.py" in generated.affordances.recommended_entry_points  # cut-short JSON read too
    ExtractiveLLM().update(existing, strange)


# --- through the real interfaces -------------------------------------------------------------------


def hook(name: str, **fields: Any) -> dict[str, Any]:
    """A Claude Code hook event as it arrives (absolute paths everywhere)."""
    return {"session_id": SESSION, "transcript_path": f"/home/me/.claude/projects/-home-me-shop/{SESSION}.jsonl",
            "cwd": ROOT, "permission_mode": "default", "hook_event_name": name, **fields}


CLAUDE_CODE_SESSION = [
    hook("UserPromptSubmit", prompt="Invoices round totals wrong; fix src/invoice.py and add a test."),
    hook("PostToolUse", tool_name="Read", tool_use_id="toolu_01",
         tool_input={"file_path": f"{ROOT}/src/invoice.py"},
         tool_response={"type": "text", "file": {"filePath": f"{ROOT}/src/invoice.py",
                                                 "content": "def total(lines):\n    return sum(lines)\n",
                                                 "numLines": 2, "startLine": 1, "totalLines": 2}}),
    hook("PostToolUse", tool_name="Edit", tool_use_id="toolu_02",
         tool_input={"file_path": f"{ROOT}/src/invoice.py", "old_string": "sum(lines)",
                     "new_string": "round(sum(lines), 2)", "replace_all": False},
         tool_response={"filePath": f"{ROOT}/src/invoice.py", "oldString": "sum(lines)",
                        "newString": "round(sum(lines), 2)", "userModified": False, "replaceAll": False}),
    hook("PostToolUse", tool_name="Write", tool_use_id="toolu_03",
         tool_input={"file_path": f"{ROOT}/tests/test_invoice.py", "content": "def test_total(): ..."},
         tool_response={"type": "create", "filePath": f"{ROOT}/tests/test_invoice.py",
                        "content": "def test_total(): ...", "structuredPatch": []}),
    hook("PostToolUse", tool_name="Bash", tool_use_id="toolu_04",
         tool_input={"command": "pytest tests/test_invoice.py", "description": "Run the invoice tests"},
         tool_response={"stdout": 'File "/usr/lib/python3.12/unittest/case.py", line 58\n1 passed',
                        "stderr": "", "interrupted": False, "isImage": False}),
    hook("Stop", last_assistant_message="We decided to round totals in src/invoice.py; the test passes."),
]


@pytest.mark.django_db
def test_a_claude_code_session_checkpoints_with_project_relative_subsystems(api, django_capture_on_commit_callbacks):
    repository = {"git_root": ROOT, "remote": None, "root_commit": None}
    for payload in CLAUDE_CODE_SESSION:
        response = api.post("/api/v1/capture/events", {"payload": payload, "repository": repository}, format="json")
        assert response.status_code == 201, response.content
    with django_capture_on_commit_callbacks(execute=True):
        ended = api.post("/api/v1/capture/events", {"payload": hook("SessionEnd", reason="exit"),
                                                    "repository": repository}, format="json").json()
    job = MedallionJob.objects.get(pk=ended["checkpoint_job_id"])
    assert (job.status, job.error) == ("done", "")
    assert job.tags == ["repo:shop"]
    found = subsystems(job.medallion)
    assert set(found) == {"src", "tests"}, found
    assert found["src"] == "touched: src/invoice.py"
    points = job.medallion.document()["affordances"]["recommended_entry_points"]
    assert points[:2] == ["src/invoice.py", "tests/test_invoice.py"]
    assert not [p for p in points if p.startswith(ROOT)]


@pytest.mark.django_db
def test_a_checkpoint_posted_with_absolute_paths_names_them_in_the_project(api, django_capture_on_commit_callbacks):
    projects.project_create(name="shop", path=ROOT)
    evidence = {"session_summary": "Fixed rounding.", "transcripts": [
        tool("Read", {"file_path": f"{ROOT}/src/invoice.py"}),
        tool("NotebookEdit", {"notebook_path": f"{ROOT}/notebooks/totals.ipynb", "new_source": "x"}),
        "assistant: also touched /home/me/shop/tests/test_invoice.py and C:\\Users\\me\\elsewhere\\a.py",
        "assistant: and ../vendor/lib.py, ~/notes/todo.md, /usr/lib/python3.12/json/decoder.py",
    ]}
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/medallions/checkpoint", {"scope": SCOPE, "evidence": evidence}, format="json")
    assert response.status_code in (200, 202), response.content
    job = MedallionJob.objects.get(pk=response.json()["job_id"])
    assert job.status == "done", job.error
    assert set(subsystems(job.medallion)) == {"src", "notebooks", "tests"}


@pytest.mark.django_db
def test_file_recall_reads_the_file_as_the_project_knows_it(api):
    repository = {"git_root": ROOT}
    said = hook("UserPromptSubmit", session_id="earlier", prompt="In src/invoice.py totals must be integer cents.")
    assert api.post("/api/v1/capture/events", {"payload": said, "repository": repository},
                    format="json").status_code == 201
    for path in (f"{ROOT}/src/invoice.py", "src/invoice.py"):
        session = f"reader-{len(path)}"
        read = hook("PostToolUse", session_id=session, tool_name="Read", tool_input={"file_path": path},
                    tool_response={"file": {"content": "x = 1"}})
        body = api.post("/api/v1/capture/events", {"payload": read, "repository": repository, "recall": True},
                        format="json").json()
        assert body["additional_context"].startswith("# Winni recalled about src/invoice.py"), body
        assert Injection.objects.get(session_id=session).file_path == "src/invoice.py"
    # A path of no usable shape recalls nothing and fails nothing.
    for path in ("/", "\x00", "C:\\", "/" + "x" * 5000):
        assert autorecall.file_named({"file_path": path}, ROOT, roots=[ROOT]) == ""
    odd = hook("PostToolUse", session_id="odd", tool_name="Read", tool_input={"file_path": "/"})
    assert api.post("/api/v1/capture/events", {"payload": odd, "repository": repository, "recall": True},
                    format="json").json()["additional_context"] == ""


@pytest.mark.django_db
def test_a_windows_session_checkpoints_relative_to_its_git_root(api, django_capture_on_commit_callbacks):
    # Projects keep POSIX paths only: the Windows git root the hook read is kept on the session.
    repository = {"git_root": "C:\\Users\\me\\shop", "root_commit": "a" * 40}
    windows = [{**hook("UserPromptSubmit", prompt="fix the totals"), "cwd": "C:\\Users\\me\\shop"}] + [
        {**hook("PostToolUse", tool_name=name, tool_input={"file_path": path}, tool_response={}),
         "cwd": "C:\\Users\\me\\shop"}
        for name, path in (("Read", "C:\\Users\\me\\shop\\src\\invoice.py"),
                           ("Write", "c:/users/me/shop/tests/test_invoice.py"))]
    for payload in windows:
        assert api.post("/api/v1/capture/events", {"payload": payload, "repository": repository},
                        format="json").status_code == 201
    with django_capture_on_commit_callbacks(execute=True):
        ended = api.post("/api/v1/capture/events", {"payload": hook("SessionEnd", reason="exit"),
                                                    "repository": repository}, format="json").json()
    job = MedallionJob.objects.get(pk=ended["checkpoint_job_id"])
    assert job.status == "done", job.error
    assert set(subsystems(job.medallion)) == {"src", "tests"}


@pytest.mark.django_db  # every model call is accounted (core.llm)
def test_a_model_writer_is_told_the_projects_root():
    from medallions import llm
    from tests.llm_servers import FakeLLMServer

    reply = json.dumps({"summary": {"high_level": "ok", "subsystems": [{"name": "src"}]}})
    server = FakeLLMServer("openai", [reply])
    try:
        llm.OpenAICompatibleLLM(base_url=server.url, api_key="k", model="m", timeout=5).generate(
            SCOPE, llm.Evidence("Fixed it.", [tool("Read", {"file_path": f"{ROOT}/src/invoice.py"})], roots=[ROOT]))
    finally:
        server.stop()
    assert f"The project lives in {ROOT}: name its files relative to that" in (
        server.requests[0]["body"]["messages"][1]["content"])


@pytest.mark.live
def test_the_mcp_checkpoint_names_absolute_paths_in_the_project(mcp_legacy):
    projects.project_create(name="shop", path=ROOT)
    evidence = {"transcripts": [tool("Edit", {"file_path": f"{ROOT}/src/invoice.py"}),
                                tool("Read", {"file_path": "/"})]}
    job = mcp_legacy.call("medallion_checkpoint_session", {"scope": SCOPE, "evidence": evidence, "wait_seconds": 30})
    assert job["status"] == "done", job
    assert [s["name"] for s in job["medallion"]["summary"]["subsystems"]] == ["src"]


@pytest.mark.django_db
def test_undecodable_bytes_in_a_sessions_paths_are_captured_and_checkpointed(api, django_capture_on_commit_callbacks):
    # What a client sends for a folder whose name is not UTF-8 (Python's json escapes the bytes it
    # read with surrogateescape as lone surrogates): nothing may fail on it, and nothing is lost.
    root = "/home/me/caf\\udcff"
    events = [
        {"hook_event_name": "UserPromptSubmit", "prompt": "fix the totals of caf\\udcff in src/invoice.py"},
        {"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": f"{root}/src/invoice.py"},
         "tool_response": {"file": {"filePath": f"{root}/src/invoice.py", "content": "x = 1"}}},
        {"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_input": {"file_path": f"{root}/tests/t\\udcff.py"},
         "tool_response": {}},
    ]
    for fields in events:
        body = {"payload": {"session_id": SESSION, "cwd": root, **fields}, "repository": {"git_root": root},
                "recall": True}
        # Escaped by hand: the test client's own encoder refuses lone surrogates.
        raw = json.dumps(body).replace("\\\\udcff", "\\udcff")
        response = api.post("/api/v1/capture/events", raw, content_type="application/json")
        assert response.status_code == 201, response.content
        assert "additional_context" in response.json()
    with django_capture_on_commit_callbacks(execute=True):
        raw = json.dumps({"payload": {"session_id": SESSION, "cwd": root, "hook_event_name": "SessionEnd"},
                          "repository": {"git_root": root}}).replace("\\\\udcff", "\\udcff")
        ended = api.post("/api/v1/capture/events", raw, content_type="application/json").json()
    job = MedallionJob.objects.get(pk=ended["checkpoint_job_id"])
    assert job.status == "done", job.error
    assert set(subsystems(job.medallion)) == {"src", "tests"}
    assert job.medallion.graph_nodes == [] and job.medallion.tags == [f"repo:{projects.project_list()[0][0].slug}"]
    prompt = Message.objects.get(conversation__session_id=SESSION, role="user").content
    assert prompt == "fix the totals of caf\ufffd in src/invoice.py"


@pytest.mark.django_db
def test_an_imported_transcript_with_undecodable_bytes_checkpoints(django_capture_on_commit_callbacks):
    from agents import capture

    root = "/home/me/caf\\udcff"
    lines = [json.dumps({"type": kind, "uuid": f"u-{n}", "sessionId": "imported", "cwd": root,
                         "timestamp": f"2026-11-28T09:0{n}:00Z", "message": {"content": content}})
             .replace("\\\\udcff", "\\udcff")
             for n, (kind, content) in enumerate([
                 ("user", "the totals of caf\\udcff are wrong"),
                 ("assistant", [{"type": "tool_use", "id": "t1", "name": "Edit",
                                 "input": {"file_path": f"{root}/src/invoice.py"}}]),
             ])]
    stats = capture.transcript_import_lines(lines)
    assert (stats.added, stats.rejected, stats.malformed) == (2, 0, 0)
    conversation = Message.objects.filter(conversation__session_id="imported").first().conversation
    assert conversation.metadata["cwd"] == "/home/me/caf\ufffd"
    medallion = medallions.checkpoint_session(scope={"graph_nodes": ["imported"], "tags": []},
                                              evidence={"conversation_id": str(conversation.id)})
    assert set(subsystems(medallion)) == {"src"}


@pytest.mark.django_db
def test_a_path_with_spaces_stays_one_path():
    projects.project_create(name="my shop", path="/Users/me/My Shop")
    transcript = "\n".join([
        tool("Read", {"file_path": "/Users/me/My Shop/src/app core.py"}),
        "assistant: the fix is in /Users/me/My Shop/tests/test_app.py now",
        tool("Read", {"file_path": "/Users/me/Application Support/tool/config.json"}),
    ])
    medallion = medallions.checkpoint_session(scope={"graph_nodes": [], "tags": ["repo:my-shop"]},
                                              evidence={"transcripts": [transcript]})
    assert set(subsystems(medallion)) == {"src", "tests"}
    points = medallion.document()["affordances"]["recommended_entry_points"]
    assert {"src/app core.py", "tests/test_app.py", "/Users/me/Application Support/tool/config.json"} <= set(points)
    assert not [p for p in points if "My" in p]
