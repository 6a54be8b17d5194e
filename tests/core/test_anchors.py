"""Anchors and stale marks (core.anchors): items that name project files remember them; a captured
change of such a file marks the item possibly stale in recall, automatic recall and the admin,
until it is confirmed or superseded. Captured through the real capture endpoint with the recorded
Claude Code payloads (tests/data/traffic)."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from conversations.filechanges import shell_changes
from conversations.models import Conversation, Message
from core import anchors
from core.models import Anchor, FileChange, ProjectFile
from core.projects import project_create
from core.recall import recall
from medallions import services as medallions
from memory import services as memories
from tests.medallion_support import document
from tests.traffic_corpus import TRAFFIC, hook_calls

CLAUDE = TRAFFIC / "claude-2.1.197"
SESSION = "fd5983ef-1af6-4cc6-865a-8cae08bdf08e"


def test_it_reads_the_files_a_text_names():
    text = ("Totals are rounded in src/invoice.py (see /home/dev/shop/src/billing/tax.py and ./docs/adr.md); "
            "invoice.py again, e.g. core.paths, v1.2, https://example.com/a/b.html, ~/notes/todo.md, "
            "../other/x.py, /etc/hosts.conf and the Dockerfile.")
    assert anchors.named_files(text, roots=["/home/dev/shop"]) == [
        "src/invoice.py", "src/billing/tax.py", "docs/adr.md", "invoice.py", "Dockerfile"]
    assert anchors.named_files("We agreed to keep the API stable and answer in JSON.") == []
    assert anchors.named_files("See ./.github/workflows/ci.yml and /home/dev/shop/.env.example.",
                               roots=["/home/dev/shop"]) == [".github/workflows/ci.yml", ".env.example"]


def test_it_reads_renames_and_deletions_out_of_shell_commands():
    assert shell_changes("git mv src/a.py src/b.py && rm -f build.log") == [
        ("rename", "src/a.py", "src/b.py", True), ("delete", "build.log", "", False)]
    assert shell_changes("mv a.py b.py lib/") == [("rename", "a.py", "lib/a.py", True),
                                                  ("rename", "b.py", "lib/b.py", True)]
    assert shell_changes("rm -rf notebooks; git rm --cached x.py | cat") == [
        ("delete", "notebooks", "", True), ("delete", "x.py", "", False)]
    assert shell_changes("grep -rn mv src | head; echo 'rm x'; cat a.py") == []
    patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n*** Delete File: c.py\n"
    assert shell_changes(patch) == [("edit", "a.py", "", False), ("rename", "a.py", "b.py", False),
                                    ("delete", "c.py", "", False)]


def _replay(api, calls, capture_on_commit, until=None):
    for call in calls:
        if call.body is None:
            continue
        if until is not None and until(call):
            return
        with capture_on_commit(execute=True):
            response = api.post("/api/v1/capture/events", call.body, format="json")
        assert response.status_code in (200, 201), response.content


@pytest.mark.django_db
def test_a_sessions_own_edits_carry_out_its_decision_and_a_later_sessions_edit_marks_it(
        api, tmp_path, django_capture_on_commit_callbacks):
    calls = hook_calls(CLAUDE, tmp_path)
    _replay(api, calls, django_capture_on_commit_callbacks)
    conversation = Conversation.objects.get(session_id=SESSION)
    files = {row.path: row for row in ProjectFile.objects.filter(project=conversation.project)}
    # The recorded Edit, Write and NotebookEdit; the note outside the project is not a project file.
    assert files["src/invoice.py"].change == FileChange.EDIT and files["src/invoice.py"].session_id == SESSION
    assert files["src/billing/tax.py"].change == FileChange.WRITE
    assert files["notebooks/report.ipynb"].change == FileChange.EDIT
    assert not any("notes/todo.md" in path for path in files)
    # The first prompt ("We decided: money amounts in src/invoice.py are integer cents…") came before
    # the session's own Edit of src/invoice.py: that Edit carries the decision out, it does not
    # make it stale (found by using Winni: every decision an agent then applied came back flagged).
    decided = Message.objects.get(conversation=conversation, content__startswith="We decided")
    key = f"message:{decided.pk}"
    assert anchors.marks([key]) == {}
    # Another session edits the file later: now it is possibly stale, based on edits only (Winni
    # cannot read /home/dev, where the recorded session ran).
    root = conversation.metadata["cwd"]
    _tool(api, django_capture_on_commit_callbacks, root, "Edit",
          {"file_path": f"{root}/src/invoice.py", "old_string": "a", "new_string": "b"}, session="s-later")
    assert ProjectFile.objects.get(project=conversation.project, path="src/invoice.py").session_id == "s-later"
    [mark] = anchors.marks([key])[key]
    assert mark.path == "src/invoice.py" and mark.basis == "edits"
    assert mark.text.startswith("src/invoice.py changed since, in session s-later on ")
    assert mark.text.endswith("(based on captured edits only: Winni holds no copy of the file from then)")


def _session(api, capture_on_commit, root, session="s-1", **payload):
    body = {"payload": {"session_id": session, "cwd": str(root), "transcript_path": "", **payload},
            "agent": "claude", "repository": {"git_root": str(root)}, "git_branch": "main"}
    with capture_on_commit(execute=True):
        response = api.post("/api/v1/capture/events", body, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()


def _edit(api, capture_on_commit, root, path, text, name="Edit"):
    """The agent changes a file of the project (on disk, as the agent's tool did) and the hook
    reports it with the path as the agent wrote it."""
    (root / path).write_text(text)
    return _tool(api, capture_on_commit, root, name, {"file_path": path, "old_string": "a", "new_string": "b"})


def _tool(api, capture_on_commit, root, name, tool_input, session="s-1"):
    return _session(api, capture_on_commit, root, session=session, hook_event_name="PostToolUse", tool_name=name,
                    tool_input=tool_input, tool_response={"success": True})


@pytest.fixture
def shop(api, tmp_path, django_capture_on_commit_callbacks):
    """A project whose files Winni can read (the test's folder is its git root)."""
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "invoice.py").write_text("def total(lines):\n    return round(sum(lines), 2)\n")
    _session(api, django_capture_on_commit_callbacks, root, hook_event_name="UserPromptSubmit",
             prompt="Where is the invoice total rounded?")
    return root, Conversation.objects.get(session_id="s-1").project


def _memory(capture_on_commit, project, content):
    with capture_on_commit(execute=True):
        memory, _ = memories.memory_store(content=content, project=project.slug)
    return f"memory:{memory.pk}"


@pytest.mark.django_db
def test_a_readable_file_is_anchored_by_content_and_a_revert_is_no_change(
        api, shop, django_capture_on_commit_callbacks):
    root, project = shop
    on_commit = django_capture_on_commit_callbacks
    key = _memory(on_commit, project, "The invoice total is rounded to 2 places in src/invoice.py.")
    unrelated = _memory(on_commit, project, "Releases are tagged on Fridays.")
    [anchor] = Anchor.objects.filter(item_key=key)
    assert anchor.path == "src/invoice.py" and len(anchor.content_hash) == 64
    assert not Anchor.objects.filter(item_key=unrelated).exists()

    original = (root / "src" / "invoice.py").read_text()
    (root / "src" / "invoice.py").write_text("def total(lines):\n    return sum(lines)\n")
    _tool(api, on_commit, root, "Edit", {"file_path": str(root / "src" / "invoice.py"), "old_string": "round(",
                                         "new_string": ""})
    [mark] = anchors.marks([key, unrelated])[key]
    assert mark.basis == "content" and "Winni cannot read" not in mark.text
    assert unrelated not in anchors.marks([unrelated])

    (root / "src" / "invoice.py").write_text(original)
    _tool(api, on_commit, root, "Edit", {"file_path": str(root / "src" / "invoice.py"), "old_string": "sum(",
                                         "new_string": "round(sum("})
    assert anchors.marks([key]) == {}  # back to the content the memory knew


@pytest.mark.django_db
def test_a_file_edited_a_thousand_times_gives_one_mark_the_latest(shop, django_capture_on_commit_callbacks):
    root, project = shop
    key = _memory(django_capture_on_commit_callbacks, project, "Totals are computed in src/orders.py.")
    start = timezone.now() + timedelta(seconds=1)
    anchors.changes_record([anchors.Change(project_id=project.pk, path="src/orders.py", change=FileChange.EDIT,
                                           at=start + timedelta(seconds=n), session_id=f"s-{n}")
                            for n in range(1000)])
    [row] = ProjectFile.objects.filter(project=project, path="src/orders.py")
    assert row.changes == 1000
    [mark] = anchors.marks([key])[key]
    assert mark.session_id == "s-999" and mark.changed_at == start + timedelta(seconds=999)


@pytest.mark.django_db
def test_renames_and_deletions_say_so(api, shop, django_capture_on_commit_callbacks):
    root, project = shop
    on_commit = django_capture_on_commit_callbacks
    moved = _memory(on_commit, project, "Tax rules live in src/invoice.py.")
    gone = _memory(on_commit, project, "The notebook notebooks/report.ipynb prints totals.")
    bare = _memory(on_commit, project, "helpers.py has the money formatting.")
    _tool(api, on_commit, root, "Write", {"file_path": str(root / "lib" / "helpers.py"), "content": "x = 1\n"})
    _tool(api, on_commit, root, "Bash", {"command": "git mv src/invoice.py src/billing/invoice.py && rm -r notebooks"})
    found = anchors.marks([moved, gone, bare])
    assert found[moved][0].text.startswith("src/invoice.py was renamed to src/billing/invoice.py since, in session s-1")
    assert found[gone][0].text.startswith("notebooks/report.ipynb was deleted since")
    # A bare file name matches the file of that name wherever it lives.
    assert found[bare][0].path == "lib/helpers.py"
    assert ProjectFile.objects.get(project=project, path="src/billing/invoice.py").change == FileChange.WRITE


@pytest.mark.django_db
def test_recall_ranks_a_stale_item_below_those_that_hold_and_says_what_changed(
        api, shop, django_capture_on_commit_callbacks):
    root, project = shop
    on_commit = django_capture_on_commit_callbacks
    stale = _memory(on_commit, project, "Invoice totals: rounding happens in src/invoice.py at the very end.")
    holds = _memory(on_commit, project, "Invoice totals are shown with two decimals in the PDF footer.")
    (root / "src" / "invoice.py").write_text("x")
    _tool(api, on_commit, root, "Write", {"file_path": str(root / "src" / "invoice.py"), "content": "x"})
    with on_commit(execute=True):
        found = recall(query="invoice totals rounding", kinds=["memory"], mode="fts",
                       filters={"project": project.slug})
    keys = [f"{hit['kind']}:{hit['id']}" for hit in found["results"]]
    assert keys == [holds, stale]
    assert found["results"][0]["stale"] is None
    [mark] = found["results"][1]["stale"]
    assert mark["path"] == "src/invoice.py" and mark["change"] == "write" and mark["session_id"] == "s-1"
    assert mark["text"].startswith("src/invoice.py changed since, in session s-1 on ")
    rest = api.post("/api/v1/recall", {"query": "invoice totals rounding", "kinds": ["memory"], "mode": "fts",
                                       "project": project.slug}, format="json").json()
    assert rest["results"][1]["stale"][0]["path"] == "src/invoice.py"


@pytest.mark.django_db
def test_file_recall_shows_the_mark_after_the_items_that_hold(api, shop, django_capture_on_commit_callbacks):
    from agents.autorecall import context_for_file

    root, project = shop
    on_commit = django_capture_on_commit_callbacks
    stale = _memory(on_commit, project, "src/invoice.py rounds each line before summing.")
    (root / "src" / "invoice.py").write_text("changed\n")
    _tool(api, on_commit, root, "Edit", {"file_path": str(root / "src" / "invoice.py"), "old_string": "a",
                                         "new_string": "b"})
    holds = _memory(on_commit, project, "src/invoice.py now sums integer cents, no rounding.")
    found = context_for_file(file_path="src/invoice.py", project=project.slug, session_id="s-2")
    assert [f"{item['kind']}:{item['id']}" for item in found["items"]] == [holds, stale]
    assert found["items"][0]["stale"] == [] and found["items"][1]["stale"][0].startswith("src/invoice.py changed since")
    assert "⚠ possibly stale: src/invoice.py changed since, in session s-1 on " in found["text"]
    assert found["text"].index(holds.split(":")[1][:8]) < found["text"].index("⚠ possibly stale")


@pytest.mark.django_db
def test_confirming_clears_the_mark_until_the_next_change(api, shop, django_capture_on_commit_callbacks):
    root, project = shop
    on_commit = django_capture_on_commit_callbacks
    key = _memory(on_commit, project, "src/invoice.py holds the rounding.")
    _edit(api, on_commit, root, "src/invoice.py", "v2")
    assert key in anchors.marks([key])
    confirmed = anchors.item_confirm(item=key, actor="alice")
    assert confirmed["files"] == ["src/invoice.py"] and confirmed["cleared"][0].startswith("src/invoice.py changed")
    assert anchors.marks([key]) == {}
    _edit(api, on_commit, root, "src/invoice.py", "v3", name="MultiEdit")
    assert key in anchors.marks([key])


@pytest.mark.django_db
def test_an_item_about_no_file_and_bad_keys_are_refused_by_name(shop, django_capture_on_commit_callbacks):
    from core.errors import InvalidInput, NotFound

    _, project = shop
    key = _memory(django_capture_on_commit_callbacks, project, "We prefer small pull requests.")
    with pytest.raises(NotFound, match="names no file Winni knows of"):
        anchors.item_confirm(item=key)
    for bad in ("memory", ":x", "memory:", 7, None):
        with pytest.raises(InvalidInput, match="item must be an item key"):
            anchors.item_confirm(item=bad)
    with pytest.raises(InvalidInput, match="a message cannot be superseded"):
        anchors.item_supersede(item="message:1")
    with pytest.raises(InvalidInput, match="replacement is required"):
        anchors.item_supersede(item=key)


@pytest.mark.django_db
def test_a_decision_naming_a_file_is_marked_and_superseded_by_its_status(
        api, shop, django_capture_on_commit_callbacks):
    root, project = shop
    on_commit = django_capture_on_commit_callbacks
    decision = {"id": "D-9", "statement": "Round once, in src/invoice.py total()", "rationale": "one place",
                "confidence": 0.9, "status": "active"}
    with on_commit(execute=True):
        medallion = medallions.medallion_create(document=document(
            scope={"graph_nodes": [f"repo:{project.slug}"], "tags": []}, decisions=[decision]))
    key = f"decision:{medallion.pk}:D-9"
    assert Anchor.objects.filter(item_key=key, path="src/invoice.py").exists()
    _edit(api, on_commit, root, "src/invoice.py", "v2")
    assert key in anchors.marks([key])
    with on_commit(execute=True):
        done = anchors.item_supersede(item=key, replacement="Sum integer cents; never round.", actor="alice")
    medallion.refresh_from_db()
    statuses = {d["id"]: d["status"] for d in medallion.decisions}
    assert statuses == {"D-9": "superseded", "D-9-r2": "active"} and done["replacement"] == f"decision:{medallion.pk}:D-9-r2"


@pytest.mark.django_db
def test_the_admin_lists_possibly_stale_items_and_confirms_them(
        api, shop, admin_client, django_capture_on_commit_callbacks):
    root, project = shop
    on_commit = django_capture_on_commit_callbacks
    key = _memory(on_commit, project, "src/invoice.py holds the rounding.")
    _memory(on_commit, project, "docs/notes.md lists the release steps.")
    _edit(api, on_commit, root, "src/invoice.py", "v2")
    page = admin_client.get("/admin/core/anchor/?stale=yes").content.decode()
    assert key in page and "src/invoice.py changed since, in session s-1" in page and "docs/notes.md" not in page
    memory_page = admin_client.get(f"/admin/memory/memory/{key.split(':')[1]}/change/").content.decode()
    assert "src/invoice.py changed since" in memory_page
    searched = admin_client.get(reverse("admin:winni_search"), {"q": "invoice rounding"}).content.decode()
    assert "possibly stale" in searched and "src/invoice.py changed since, in session s-1" in searched
    ids = list(Anchor.objects.filter(item_key=key).values_list("pk", flat=True))
    admin_client.post("/admin/core/anchor/", {"action": "confirm_items", "_selected_action": ids})
    assert anchors.marks([key]) == {}
    assert key not in admin_client.get("/admin/core/anchor/?stale=yes").content.decode()


@pytest.mark.live
def test_the_agent_confirms_and_supersedes_through_mcp(winni_server, mcp_legacy, transactional_db):
    project = project_create(name="shop-live")
    memory, _ = memories.memory_store(content="src/invoice.py rounds at the end.", project=project.slug)
    key = f"memory:{memory.pk}"
    anchors.on_changed(kind="memory", ids=[memory.pk])
    anchors.changes_record([anchors.Change(project_id=project.pk, path="src/invoice.py", change=FileChange.EDIT,
                                           at=timezone.now(), session_id="s-live")])
    assert key in anchors.marks([key])
    confirmed = mcp_legacy.call("winni_item_confirm", {"item": key})
    assert confirmed["cleared"][0].startswith("src/invoice.py changed since, in session s-live")
    assert anchors.marks([key]) == {}
    assert "item must be an item key" in mcp_legacy.call_error("winni_item_confirm", {"item": "nonsense"})
    assert "replacement is required" in mcp_legacy.call_error("winni_item_confirm",
                                                              {"item": key, "action": "supersede"})
    done = mcp_legacy.call("winni_item_confirm", {"item": key, "action": "supersede",
                                                  "replacement": "src/invoice.py sums integer cents."})
    memory.refresh_from_db()
    assert done["replacement"] == f"memory:{memory.superseded_by_id}"
    # The replacement, stored by the server, is anchored there too (anchor_on_commit).
    assert Anchor.objects.filter(item_key=done["replacement"], path="src/invoice.py").exists()



def test_every_stored_shape_of_a_file_changing_call_is_read():
    from conversations.filechanges import call_changes
    from conversations.toolcalls import tool_call

    hook = json.dumps({"tool_name": "Write", "tool_input": {"file_path": "/r/a.py", "content": "x"}, "tool_response": {}})
    transcript = json.dumps({"tool_use": "MultiEdit", "id": "toolu_1", "input": {"file_path": "/r/b.py", "edits": []}})
    codex = json.dumps({"tool_call": "shell", "call_id": "c1",
                        "input": json.dumps({"command": ["bash", "-lc", "git rm c.py && ls"]})})
    gemini = json.dumps({"tool_name": "replace", "tool_input": {"file_path": "/r/d.py"}, "tool_response": {}})
    # A Write of a large file is cut by the capture limit: no longer JSON, its name and path still read.
    cut = json.dumps({"tool_name": "Write", "tool_input": {"file_path": "/r/e.py", "content": "x" * 500}})[:200]
    assert [call_changes(*tool_call(content)[:2]) for content in (hook, transcript, codex, gemini, cut)] == [
        [("write", "/r/a.py", "", False)], [("edit", "/r/b.py", "", False)], [("delete", "c.py", "", False)],
        [("edit", "/r/d.py", "", False)], [("write", "/r/e.py", "", False)]]
    assert tool_call(json.dumps({"tool_result": "ok", "tool_use_id": "toolu_1"})) is None


# --- new commits seen at SessionStart (agents.commits, the hook's report) ---------------------------------


def _git(root, *args):
    import subprocess

    done = subprocess.run(["git", "-C", str(root), "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.live
def test_commits_seen_at_session_start_mark_the_items_of_their_files(winni_server, live_token, tmp_path,
                                                                      django_capture_on_commit_callbacks):
    """Through the real hook program in a real repository: the first SessionStart only tells Winni
    HEAD; commits made outside any session (an editor, a pull) mark, at the next one, the items of
    the files they changed, one mark per file (its latest commit), renames said so."""
    from core.models import Project
    from tests.agents.test_capture_hooks import run_hook

    repo = tmp_path / "shop"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "invoice.py").write_text("def total(lines):\n    return round(sum(lines), 2)\n")
    (repo / "src" / "old.py").write_text("EXPORT = 'csv'\n")
    (repo / "README.md").write_text("Setup: make install\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WINNI_URL": winni_server.url, "WINNI_TOKEN": live_token,
           "WINNI_HOOK_SPOOL": str(tmp_path / "spool.jsonl"), "WINNI_HOOK_LOG": str(tmp_path / "hook.log")}

    def hook(name: str, **fields) -> str:
        done = run_hook({"session_id": f"s-{name}", "cwd": str(repo), "hook_event_name": name, **fields}, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    hook("UserPromptSubmit", prompt="Where is the invoice total rounded?")
    project = Project.objects.get(conversations__session_id="s-UserPromptSubmit")
    rounding = _memory(django_capture_on_commit_callbacks, project, "Rounding happens in src/invoice.py.")
    legacy = _memory(django_capture_on_commit_callbacks, project, "src/old.py holds the legacy export.")
    setup = _memory(django_capture_on_commit_callbacks, project, "README.md explains the setup.")
    fridays = _memory(django_capture_on_commit_callbacks, project, "Releases are tagged on Fridays.")
    hook("SessionStart", source="startup")
    first = _git(repo, "rev-parse", "HEAD")
    project.refresh_from_db()
    assert project.settings["commit_seen"] == first and not ProjectFile.objects.filter(project=project).exclude(
        commit="").exists()

    (repo / "src" / "invoice.py").write_text("def total(lines):\n    return sum(lines)\n")
    _git(repo, "mv", "src/old.py", "src/new.py")
    _git(repo, "commit", "-qam", "no rounding; old.py is new.py")
    renamed = _git(repo, "rev-parse", "HEAD")
    (repo / "src" / "invoice.py").write_text("def total(lines):\n    return sum(lines) // 1\n")
    _git(repo, "commit", "-qam", "integer totals")
    last = _git(repo, "rev-parse", "HEAD")
    hook("SessionStart", source="startup")

    found = anchors.marks([rounding, legacy, setup, fridays])
    assert set(found) == {rounding, legacy}
    [mark] = found[rounding]  # two commits changed it: one mark, the latest
    assert mark.commit == last and mark.text.startswith(f"src/invoice.py changed since, in commit {last[:7]} on ")
    assert found[legacy][0].text.startswith(f"src/old.py was renamed to src/new.py since, in commit {renamed[:7]}")
    project.refresh_from_db()
    assert project.settings["commit_seen"] == last
    # Nothing new: the hook asks nothing more, and nothing changes.
    rows = list(ProjectFile.objects.filter(project=project).values_list("path", "changes"))
    hook("SessionStart", source="resume")
    assert list(ProjectFile.objects.filter(project=project).values_list("path", "changes")) == rows
    log = tmp_path / "hook.log"
    assert not log.exists() or "failed" not in log.read_text(), log.read_text()


@pytest.mark.django_db
def test_a_commit_report_is_checked_whole_and_a_captured_edit_stays_the_sessions(
        api, shop, django_capture_on_commit_callbacks):
    from agents import commits

    root, project = shop
    key = _memory(django_capture_on_commit_callbacks, project, "Totals are rounded in src/invoice.py.")
    repository = {"git_root": str(root)}

    def report(**body):
        return api.post("/api/v1/capture/commits", {"repository": repository, "cwd": str(root), **body}, format="json")

    assert report(head="a" * 40).json()["since"] is None  # the first report: HEAD only
    when = (timezone.now() + timedelta(seconds=5)).isoformat()
    good = {"status": "M", "path": "src/invoice.py", "commit": "b" * 40, "committed_at": when}
    for body, field in (({"head": "xyz"}, "head"), ({"head": "b" * 40, "files": [good]}, "files"), ({"head": "b" * 40, "since": "a" * 40, "files": {}}, "files"),
                        ({"head": "b" * 40, "since": "a" * 40, "files": [{**good, "status": "Z"}]}, "files[0]"),
                        ({"head": "b" * 40, "since": "a" * 40, "files": [good, {**good, "committed_at": "soon"}]},
                         "files[1].committed_at"),
                        ({"head": "b" * 40, "since": "a" * 40, "files": [good] * (commits.FILES_MAX + 1)}, "files")):
        answer = report(**body)
        assert answer.status_code == 400 and field in answer.json()["error"]["fields"], answer.content
    project.refresh_from_db()
    assert project.settings["commit_seen"] == "a" * 40 and key not in anchors.marks([key])  # nothing written
    # The file was edited in a session since the last report: the commit holding it is that
    # session's change, whose mark names the session.
    (root / "src" / "invoice.py").write_text("def total(lines):\n    return (sum(lines), 2)\n")
    _tool(api, django_capture_on_commit_callbacks, root, "Edit",
          {"file_path": str(root / "src" / "invoice.py"), "old_string": "round(", "new_string": "("}, session="s-9")
    assert report(head="b" * 40, since="a" * 40, files=[good]).json()["files"] == 0
    assert "in session s-9" in anchors.marks([key])[key][0].text
    unknown = api.post("/api/v1/capture/commits", {"repository": {"git_root": "/elsewhere/repo"}, "head": "c" * 40},
                       format="json")
    assert unknown.status_code == 404 and "repository" in unknown.json()["error"]["fields"]
