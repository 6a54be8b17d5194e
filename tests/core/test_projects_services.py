"""Projects in the service layer: how an identity resolves to a project, the `project` argument of
writes and filters of every store, startup contexts per project, merge, and the command."""
from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from contexts import services as contexts
from contexts.models import StartupContext
from conversations import services as conversations
from core import projects, recall
from core.errors import ApplicationError, Conflict, InvalidInput, NotFound
from core.models import Project, ProjectKey
from core.projects import Identity, project_resolve
from medallions import services as medallions
from memory import services as memories
from memory.librarian import services as librarian
from memory.models import Memory
from tests.medallion_support import document

pytestmark = pytest.mark.django_db

ROOT_A = "a" * 40
ROOT_B = "b" * 40


@pytest.mark.parametrize(("url", "normalised"), [
    ("git@github.com:Org/Repo.git", "github.com/org/repo"),
    ("ssh://git@github.com/org/repo", "github.com/org/repo"),
    ("https://user:pw@GitHub.com/Org/Repo.git/", "github.com/org/repo"),
    ("ssh://git@github.com:22/org/repo.git", "github.com/org/repo"),
    ("https://git.example.org/Team/App.git", "git.example.org/Team/App"),
    ("git@git.example.org:Team/App", "git.example.org/Team/App"),
    ("/srv/git/app.git", "/srv/git/app"),
    ("file:///srv/git/app.git/", "/srv/git/app"),
])
def test_remote_urls_normalise_to_one_form(url, normalised):
    assert projects.normalise_remote(url) == normalised


def test_bad_identity_parts_name_their_field():
    with pytest.raises(InvalidInput) as bad:
        Identity.of(root_commit="not-a-hash", prefix="repository.")
    assert bad.value.field == "repository.root_commit"
    with pytest.raises(InvalidInput) as relative:
        Identity.of(git_root="src/app")
    assert relative.value.field == "git_root" and "absolute" in relative.value.message


class TestResolve:
    def test_worktree_clone_subdirectory_and_rename_keep_the_project(self):
        main = project_resolve(Identity.of(remote="git@github.com:org/app.git", root_commit=ROOT_A,
                                           git_root="/home/u/one/app", cwd="/home/u/one/app/src"))
        assert (main.name, main.slug) == ("app", "app")
        worktree = project_resolve(Identity.of(remote="git@github.com:org/app.git", root_commit=ROOT_A,
                                               git_root="/home/u/wt/app-feature"))
        clone = project_resolve(Identity.of(remote="https://github.com/Org/App", git_root="/tmp/clone"))
        renamed = project_resolve(Identity.of(root_commit=ROOT_A, git_root="/home/u/one/app-renamed"))
        subdirectory = project_resolve(Identity.of(cwd="/home/u/one/app/src/deep"), create=False)
        assert {worktree.pk, clone.pk, renamed.pk, subdirectory.pk} == {main.pk}
        assert Project.objects.count() == 1
        assert set(main.keys.values_list("kind", "value")) == {
            ("remote", "github.com/org/app"), ("root_commit", ROOT_A), ("path", "/home/u/one/app"),
            ("path", "/home/u/wt/app-feature"), ("path", "/tmp/clone"), ("path", "/home/u/one/app-renamed")}

    def test_two_repositories_with_one_folder_name_are_two_projects(self):
        first = project_resolve(Identity.of(root_commit=ROOT_A, git_root="/home/u/one/app"))
        second = project_resolve(Identity.of(root_commit=ROOT_B, git_root="/home/u/two/app"))
        assert first.pk != second.pk and (first.slug, second.slug) == ("app", "app-2")

    def test_a_repository_that_gains_a_remote_keeps_its_project(self):
        first = project_resolve(Identity.of(root_commit=ROOT_A, git_root="/w/tool"))
        again = project_resolve(Identity.of(remote="git@gitlab.com:me/tool.git", root_commit=ROOT_A, git_root="/w/tool"))
        assert again.pk == first.pk
        assert ProjectKey.objects.get(kind="remote").project_id == first.pk

    def test_a_new_repository_at_an_old_path_is_a_new_project(self):
        old = project_resolve(Identity.of(root_commit=ROOT_A, git_root="/w/app"))
        new = project_resolve(Identity.of(root_commit=ROOT_B, git_root="/w/app"))
        assert new.pk != old.pk
        # The path now belongs to the repository there.
        assert ProjectKey.objects.get(kind="path", value="/w/app").project_id == new.pk

    def test_outside_git_the_working_directory_is_the_identity(self):
        scratch = project_resolve(Identity.of(cwd="/home/u/notes"))
        assert scratch.slug == "notes" and project_resolve(Identity.of(cwd="/home/u/notes")).pk == scratch.pk
        assert project_resolve(Identity.of(cwd="/home/u/other"), create=False) is None
        assert project_resolve(Identity()) is None

    def test_a_read_writes_nothing(self):
        assert project_resolve(Identity.of(git_root="/w/app"), create=False) is None
        assert Project.objects.count() == ProjectKey.objects.count() == 0

    def test_a_legacy_project_is_claimed_by_its_folder_name(self):
        legacy = Project.objects.create(name="winni", slug="winni")
        ProjectKey.objects.create(project=legacy, kind="alias", value="winni")
        found = project_resolve(Identity.of(root_commit=ROOT_A, git_root="/src/winni"))
        assert found.pk == legacy.pk and legacy.keys.filter(kind="root_commit").exists()
        # Claimed: another repository with that folder name is another project.
        other = project_resolve(Identity.of(root_commit=ROOT_B, git_root="/elsewhere/winni"))
        assert other.pk != legacy.pk


class TestWritesAndFilters:
    def test_an_unknown_project_on_a_write_is_a_clear_error_and_writes_nothing(self):
        for write in (lambda: conversations.conversation_begin(project="nope"),
                      lambda: conversations.messages_store_bulk(messages=[{"role": "user", "content": "x"}],
                                                                project="nope"),
                      lambda: memories.memory_store(content="a fact", project="nope"),
                      lambda: contexts.context_set(name="rules", content="x", actor="t", project="nope"),
                      lambda: librarian.librarian_remember(query="q?", answer="a", project="nope")):
            with pytest.raises(NotFound) as error:
                write()
            assert error.value.field == "project"
            assert "no project named 'nope'" in error.value.message and "winni_project create" in error.value.message
        assert not StartupContext.objects.exists() and not Memory.objects.exists()

    def test_an_unknown_project_in_a_filter_finds_nothing(self):
        app = projects.project_create(name="app")
        conversation = conversations.conversation_begin(project="app")
        conversations.message_store(conversation_id=conversation.id, role="user", content="the flamingo deploy")
        memories.memory_store(content="the flamingo lives in app", project=app)
        contexts.context_set(name="rules", content="flamingo rules", actor="t", project="app")
        medallions.medallion_create(document=document({"graph_nodes": [], "tags": ["repo:app"]}))
        for name, expected in (("app", 1), ("nope", 0)):
            assert conversations.conversation_list(project=name)[1] == expected
            assert conversations.message_search(query="flamingo", project=name, mode="fts").total == expected
            assert memories.memory_list(project=name).count() == expected
            assert len(contexts.context_list(project=name)) == expected
            assert len(medallions.medallions_latest_for_scope(scope={}, project=name)) == expected
            found = recall.recall(query="flamingo", mode="fts", filters={"project": name})
            assert (found["count"] > 0) == bool(expected)
        assert conversations.message_search(query="flamingo", project="nope", mode="hybrid").hits == []
        assert memories.memory_search(query="flamingo", project="nope") == []

    def test_rows_carry_their_project(self):
        app = projects.project_create(name="app")
        conversation = conversations.conversation_begin(project="APP")  # a name finds its project
        assert conversation.project_id == app.pk
        bulk, _ = conversations.messages_store_bulk(messages=[{"role": "user", "content": "hi"}], project="app")
        assert bulk.project_id == app.pk
        with pytest.raises(InvalidInput) as late:
            conversations.messages_store_bulk(messages=[{"role": "user", "content": "hi"}], conversation_id=bulk.id,
                                              project="app")
        assert late.value.field == "project"
        # A memory takes the project of the conversation (or message) it came from.
        message = conversations.message_store(conversation_id=conversation.id, role="user", content="x")
        from_conversation, _ = memories.memory_store(content="fact one", conversation_id=str(conversation.id))
        from_message, _ = memories.memory_store(content="fact two", message_id=str(message.id))
        assert from_conversation.project_id == from_message.project_id == app.pk
        assert memories.memory_store(content="fact three")[0].project_id is None
        # The same fact in two projects is two memories; twice in one project, one.
        other = projects.project_create(name="other")
        assert memories.memory_store(content="Fact one", project=other)[1] is True
        assert memories.memory_store(content="fact  ONE", project=app)[1] is False
        # A medallion's scope repo:<name> links it (an alias works too); an unknown name links nothing.
        linked = medallions.medallion_create(document=document({"graph_nodes": ["repo:app"], "tags": []}))
        unlinked = medallions.medallion_create(document=document({"graph_nodes": [], "tags": ["repo:ghost"]}))
        assert (linked.project_id, unlinked.project_id) == (app.pk, None)

    def test_last_activity_moves_at_most_once_a_minute(self, django_capture_on_commit_callbacks):
        app = projects.project_create(name="app")
        Project.objects.filter(pk=app.pk).update(last_activity_at="2026-01-01T00:00:00Z")
        projects._touched.clear()
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            conversation = conversations.conversation_begin(project=app)
            conversations.message_store(conversation_id=conversation.id, role="user", content="x")
            conversations.message_store(conversation_id=conversation.id, role="user", content="y")
        assert sum("bump" in getattr(c, "__qualname__", "") for c in callbacks) == 1
        app.refresh_from_db()
        assert app.last_activity_at > dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)


class TestStartupContexts:
    def test_one_active_per_project_plus_one_global(self):
        projects.project_create(name="alpha")
        projects.project_create(name="beta")
        contexts.context_set(name="rules", content="GLOBAL", actor="t")
        contexts.context_set(name="rules", content="ALPHA", actor="t", project="alpha")
        contexts.context_set(name="rules", content="BETA", actor="t", project="beta")
        contexts.context_set(name="more", content="ALPHA 2", actor="t", project="alpha")  # replaces ALPHA
        assert contexts.context_get().content == "GLOBAL"
        assert contexts.context_get(project="alpha").content == "ALPHA 2"
        assert contexts.context_get(project="beta").content == "BETA"
        assert contexts.context_get(name="rules", project="alpha").is_active is False
        assert contexts.context_get(project="nope") is None
        with pytest.raises(NotFound):
            contexts.context_get(name="rules", project="nope")
        with pytest.raises(ApplicationError) as taken:
            contexts.context_set(name="rules", content="x", actor="t", project="alpha", mode="create")
        assert "in project 'alpha'" in taken.value.message
        contexts.context_activate(name="rules", actor="t", project="alpha")
        assert [c.content for c in StartupContext.objects.filter(is_active=True).order_by("content")] == [
            "ALPHA", "BETA", "GLOBAL"]
        contexts.context_delete(name="rules", force=True, actor="t", project="beta")
        assert contexts.context_get(project="beta") is None and contexts.context_get().content == "GLOBAL"
        trail = contexts.context_audit(name="rules", project="alpha")
        assert {row.action for row in trail} == {"create", "activate", "deactivate"}

    def test_the_database_refuses_a_second_active_context_in_one_scope(self):
        alpha = projects.project_create(name="alpha")
        StartupContext.objects.create(name="one", content="x", is_active=True, project=alpha)
        StartupContext.objects.create(name="one", content="x", is_active=True)  # global: its own scope
        with pytest.raises(IntegrityError), transaction.atomic():
            StartupContext.objects.create(name="two", content="x", is_active=True, project=alpha)
        with pytest.raises(IntegrityError), transaction.atomic():
            StartupContext.objects.create(name="two", content="x", is_active=True)
        with pytest.raises(IntegrityError), transaction.atomic():
            StartupContext.objects.create(name="one", content="x", project=alpha)


class TestMerge:
    def test_merge_moves_every_row_and_keeps_the_source_as_an_alias(self):
        source = project_resolve(Identity.of(root_commit=ROOT_A, git_root="/old/app"))
        target = projects.project_create(name="app-main", remote="git@github.com:org/app.git")
        conversation = conversations.conversation_begin(project=source)
        memories.memory_store(content="shared fact", project=source, tags=["a"])
        memories.memory_store(content="shared fact", project=target, tags=["b"])
        memories.memory_store(content="only in source", project=source)
        contexts.context_set(name="rules", content="SOURCE", actor="t", project=source)
        contexts.context_set(name="rules", content="TARGET", actor="t", project=target)
        librarian.librarian_remember(query="where?", answer="here", project=source)
        librarian.librarian_remember(query="where?", answer="there", project=target)
        medallions.medallion_create(document=document({"graph_nodes": [], "tags": [f"repo:{source.slug}"]}))

        with pytest.raises(Conflict, match="cannot be merged into itself"):
            projects.project_merge(source="app", target="app")
        assert projects.project_merge(source="app", target="app-main", dry_run=True)["conversations"] == 1
        moved = projects.project_merge(source="app", target="app-main")
        assert moved == {"conversations": 1, "contexts": 1, "memories": 1, "cache_entries": 0, "medallions": 1,
                         "api_tokens": 0, "digests": 0}
        assert not Project.objects.filter(pk=source.pk).exists()
        conversation.refresh_from_db()
        assert conversation.project_id == target.pk
        assert sorted(Memory.objects.filter(project=target).values_list("content", "tags")) == [
            ("only in source", []), ("shared fact", ["b", "a"])]
        # Names collide: the moved context is renamed; the target's active context stays active.
        assert sorted(StartupContext.objects.filter(project=target).values_list("name", "is_active")) == [
            ("rules", True), ("rules (from app)", False)]
        # The source's keys identify the target now, and its slug finds it.
        assert project_resolve(Identity.of(root_commit=ROOT_A, git_root="/old/app")).pk == target.pk
        assert projects.project_find("app").pk == target.pk
        assert medallions.medallions_latest_for_scope(scope={}, project="app")[0].project_id == target.pk

    def test_a_failing_store_leaves_everything_as_it_was(self, monkeypatch):
        source = projects.project_create(name="one")
        projects.project_create(name="two")
        conversations.conversation_begin(project=source)

        def broken(source: Project, target: Project) -> int:
            raise RuntimeError("disk full")

        store = projects._stores["contexts"]
        monkeypatch.setitem(projects._stores, "contexts", projects.ProjectStore(
            label=store.label, model=store.model, merge=broken))
        with pytest.raises(RuntimeError):
            projects.project_merge(source="one", target="two")
        assert Project.objects.filter(pk=source.pk).exists()
        assert conversations.conversation_list(project="one")[1] == 1


class TestLibrarian:
    def test_an_ask_in_a_project_takes_its_entry_first_then_the_global_one(self):
        projects.project_create(name="app")
        librarian.librarian_remember(query="Which port?", answer="global: 9020")
        assert librarian.librarian_ask(query="which port?", project="app").answer == "global: 9020"
        librarian.librarian_remember(query="Which port?", answer="app: 8000", project="app")
        assert librarian.librarian_ask(query="which port?", project="app").answer == "app: 8000"
        assert librarian.librarian_ask(query="which port?").answer == "global: 9020"
        with pytest.raises(NotFound):
            librarian.librarian_ask(query="which port?", project="nope")
        librarian.librarian_forget(query="which port?", project="app")
        assert librarian.librarian_ask(query="which port?", project="app").answer == "global: 9020"


class TestCommand:
    def test_create_list_rename_merge(self, capsys, tmp_path):
        call_command("winni_project", "create", "Tooling", "--path", str(tmp_path), "--remote", "git@github.com:o/t.git")
        assert "created project tooling" in capsys.readouterr().out
        with pytest.raises(CommandError, match="already identifies project 'tooling'"):
            call_command("winni_project", "create", "Again", "--path", str(tmp_path))
        call_command("winni_project", "create", "scratch")
        call_command("winni_project", "rename", "scratch", "Scratch Pad")
        assert "renamed to scratch-pad" in capsys.readouterr().out
        call_command("winni_project", "list")
        listed = capsys.readouterr().out
        assert "tooling\tTooling" in listed and f"path={tmp_path}" in listed and "conversations 0" in listed
        with pytest.raises(CommandError, match="cannot be merged into itself"):
            call_command("winni_project", "merge", "tooling", "Tooling")
        with pytest.raises(CommandError, match="no project named 'ghost'"):
            call_command("winni_project", "merge", "ghost", "tooling")
        call_command("winni_project", "merge", "scratch", "tooling", "--dry-run")
        assert "would merge scratch into tooling" in capsys.readouterr().out
        assert Project.objects.count() == 2
        call_command("winni_project", "merge", "scratch", "tooling")
        assert list(Project.objects.values_list("slug", flat=True)) == ["tooling"]
        assert set(ProjectKey.objects.filter(kind="alias").values_list("value", flat=True)) == {
            "scratch-pad", "Scratch Pad", "scratch"}


class TestCapture:
    """The projects of imported transcripts and proxied sessions (the hooks: test_projects_identity)."""

    # The recorded transcript's working directory (a pytest temporary directory of the run that made
    # it), moved to one that cannot exist here: a test run whose pytest counter reaches the same number
    # creates that directory as a git repository, and the project would then come from it.
    RECORDED_CWD = "/tmp/pytest-of-root/pytest-8/test_a_headless_session_is_cap0/alpha-repo"
    SAMPLE_CWD = "/winni-test-absent/pytest-8/test_a_headless_session_is_cap0/alpha-repo"

    def test_an_imported_transcript_joins_the_project_of_its_working_directory(self, tmp_path):
        from tests.agents.test_capture_import import SAMPLE, run

        sample = tmp_path / SAMPLE.name
        sample.write_text(SAMPLE.read_text().replace(self.RECORDED_CWD, self.SAMPLE_CWD))
        known = projects.project_create(name="alpha", path=self.SAMPLE_CWD.rpartition("/")[0])
        run(sample)
        assert conversations.conversation_list(project=known)[1] == 1
        # Without a known git root above it, the working directory (not on this machine) makes one.
        from conversations.models import Conversation

        Conversation.objects.all().delete()
        ProjectKey.objects.filter(project=known).delete()
        run(sample)
        made = Conversation.objects.select_related("project").get().project
        assert made.slug == "alpha-repo" and list(made.keys.values_list("kind", "value")) == [("cwd", self.SAMPLE_CWD)]

    def test_a_transcript_from_a_repository_on_this_machine_is_read_here(self, tmp_path):
        import json
        import subprocess

        repository = tmp_path / "tool"
        subprocess.run(["git", "init", "-q", str(repository)], check=True)
        subprocess.run(["git", "-C", str(repository), "remote", "add", "origin", "git@github.com:me/tool.git"],
                       check=True)
        (repository / "src").mkdir()
        line = {"type": "user", "uuid": "u-1", "sessionId": "s-1", "cwd": str(repository / "src"),
                "message": {"role": "user", "content": "hello"}}
        from agents import capture

        capture.transcript_import_lines([json.dumps(line)])
        found = projects.project_find("tool")
        assert found is not None and found.keys.filter(kind="remote", value="github.com/me/tool").exists()
        assert conversations.conversation_list(project="tool")[1] == 1

    def test_the_proxy_stores_its_sessions_in_its_project(self):
        from agents import capture

        projects.project_create(name="app")
        capture.capture_proxy_message(upstream="gh", client_session="c1", direction="call", request_id=1,
                                      body={"tool": "x"}, project="app")
        assert conversations.conversation_list(project="app")[1] == 1
        with pytest.raises(CommandError, match="--project: no project named 'nope'"):
            call_command("mcp_proxy", "--upstream", "gh=http://127.0.0.1:9", "--project", "nope")

    def test_a_session_that_names_its_place_late_gets_its_project(self):
        from agents import capture

        payload = {"session_id": "late", "hook_event_name": "UserPromptSubmit", "prompt": "first"}
        capture.capture_hook_event(payload=payload)
        assert conversations.conversation_list()[0][0].project_id is None
        capture.capture_hook_event(payload={**payload, "prompt": "second", "cwd": "/home/u/late"},
                                   repository={"git_root": "/home/u/late", "remote": None, "root_commit": ROOT_A})
        conversation = conversations.conversation_list()[0][0]
        assert conversation.project.slug == "late" and conversation.message_count == 2
        with pytest.raises(InvalidInput) as bad:
            capture.capture_hook_event(payload={**payload, "prompt": "third"}, repository={"branch": "main"})
        assert bad.value.field == "repository.branch"
