"""Which project a session is in, with real git repositories and the real hook program against a
live Winni: two repositories with the same folder name, a worktree, a subdirectory, a clone with
the same remote, a repository without a remote, a renamed folder, a remote added later. And what
SessionStart prints in each: never another project's context or medallions."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agents import hook as claude_hook
from contexts import services as contexts
from conversations.models import Conversation
from core import projects
from medallions import services as medallions
from tests.agents.test_capture_hooks import run_hook
from tests.medallion_support import document

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_NOSYSTEM": "1"}


def git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd or Path.cwd())}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def new_repository(path: Path, text: str) -> str:
    """A repository with one commit; returns that (root) commit."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", str(path), cwd=path)
    (path / "README").write_text(text)
    git("add", "README", cwd=path)
    git("commit", "-q", "-m", text, cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


@pytest.fixture
def repositories(tmp_path: Path) -> dict[str, Path]:
    """one/app and two/app (same folder name, different histories and remotes), a bare copy of
    one/app that is its origin, a clone of that bare copy, a worktree and a subdirectory of
    one/app, and four/tool without a remote."""
    places = {"a": tmp_path / "one" / "app", "b": tmp_path / "two" / "app", "bare": tmp_path / "remotes" / "app.git",
              "clone": tmp_path / "three" / "app-copy", "worktree": tmp_path / "wt" / "app-feature",
              "tool": tmp_path / "four" / "tool"}
    new_repository(places["a"], "alpha")
    git("clone", "-q", "--bare", str(places["a"]), str(places["bare"]), cwd=tmp_path)
    git("remote", "add", "origin", str(places["bare"]), cwd=places["a"])
    git("clone", "-q", str(places["bare"]), str(places["clone"]), cwd=tmp_path)
    git("worktree", "add", "-q", "-b", "feature", str(places["worktree"]), cwd=places["a"])
    places["sub"] = places["a"] / "src" / "deep"
    places["sub"].mkdir(parents=True)
    new_repository(places["b"], "beta")
    git("remote", "add", "origin", "git@github.com:Someone/App.git", cwd=places["b"])
    new_repository(places["tool"], "tool")
    return places


def event(name: str, session: str, cwd: Path, **fields: object) -> dict:
    return {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": str(cwd),
            "hook_event_name": name, **fields}


@pytest.fixture
def hook(winni_server, live_token, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WINNI_URL": winni_server.url, "WINNI_TOKEN": live_token,
           "WINNI_HOOK_SPOOL": str(tmp_path / "cache" / "spool.jsonl"), "WINNI_HOOK_LOG": str(tmp_path / "hook.log"),
           "WINNI_HOOK_TIMEOUT": "5"}

    def run(payload: dict) -> str:
        done = run_hook(payload, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


def project_of(session: str) -> projects.Project:
    return Conversation.objects.select_related("project").get(session_id=session).project


@pytest.mark.live
def test_each_place_resolves_to_its_repositorys_project(repositories, hook, tmp_path):
    for session, place in (("s-a", "a"), ("s-worktree", "worktree"), ("s-sub", "sub"), ("s-clone", "clone"),
                           ("s-b", "b"), ("s-tool", "tool")):
        hook(event("UserPromptSubmit", session, repositories[place], prompt=f"hello from {place}"))
    alpha = project_of("s-a")
    assert {project_of(s).pk for s in ("s-worktree", "s-sub", "s-clone")} == {alpha.pk}
    beta, tool = project_of("s-b"), project_of("s-tool")
    assert len({alpha.pk, beta.pk, tool.pk}) == 3
    # Both repositories are called "app" (their folders; beta's remote too): two projects, two slugs.
    assert (alpha.name, beta.name) == ("app", "app") and {alpha.slug, beta.slug} == {"app", "app-2"}
    keys = dict(alpha.keys.values_list("kind", "value").order_by("kind"))
    assert keys["remote"] == str(repositories["bare"])[: -len(".git")]
    assert keys["root_commit"] == git("rev-list", "--max-parents=0", "HEAD", cwd=repositories["a"])
    assert ("remote", "github.com/someone/app") in set(beta.keys.values_list("kind", "value"))
    # The hook ran git once per repository (the worktree shares one/app's): the rest came from its cache.
    cached = json.loads((tmp_path / "cache" / "claude-hook-roots.json").read_text())
    assert len(cached) == 4

    # A renamed folder keeps its project (same root commit); so does a repository that gains a remote.
    renamed = repositories["tool"].with_name("tool-renamed")
    shutil.move(repositories["tool"], renamed)
    hook(event("UserPromptSubmit", "s-renamed", renamed, prompt="after the rename"))
    git("remote", "add", "origin", "https://example.org/me/tool.git", cwd=renamed)
    hook(event("UserPromptSubmit", "s-remote", renamed / ".", prompt="after the remote"))
    assert project_of("s-renamed").pk == project_of("s-remote").pk == tool.pk
    assert tool.keys.filter(kind="remote", value="example.org/me/tool").exists()


@pytest.mark.live
def test_session_start_shows_only_its_own_projects_context_and_medallions(repositories, hook):
    hook(event("UserPromptSubmit", "s-a", repositories["a"], prompt="a"))
    hook(event("UserPromptSubmit", "s-b", repositories["b"], prompt="b"))
    alpha, beta = project_of("s-a"), project_of("s-b")
    contexts.context_set(name="house", content="GLOBAL RULES", actor="t")
    contexts.context_set(name="rules", content="ALPHA RULES", actor="t", project=alpha)
    contexts.context_set(name="rules", content="BETA RULES", actor="t", project=beta)
    for project, text in ((alpha, "ALPHA CHECKPOINT"), (beta, "BETA CHECKPOINT")):
        medallions.medallion_create(document=document({"graph_nodes": [], "tags": [f"repo:{project.slug}"]},
                                                      summary={"high_level": text, "subsystems": []}))

    for place in ("a", "sub", "worktree", "clone"):
        text = hook(event("SessionStart", f"start-{place}", repositories[place], source="startup"))
        assert text.index("GLOBAL RULES") < text.index("ALPHA RULES") < text.index("ALPHA CHECKPOINT"), place
        assert "BETA" not in text, place
    text = hook(event("SessionStart", "start-b", repositories["b"], source="startup"))
    assert "GLOBAL RULES" in text and "BETA RULES" in text and "BETA CHECKPOINT" in text and "ALPHA" not in text
    # A repository Winni has not seen yet gets the global context only (and no project is made by a read).
    text = hook(event("SessionStart", "start-tool", repositories["tool"], source="startup"))
    assert text.strip() == "# Startup context: house (from Winni)\n\nGLOBAL RULES"
    assert not projects.Project.objects.filter(name="tool").exists()


def test_the_hook_reads_a_repository_without_a_server(repositories, tmp_path, monkeypatch):
    cache = tmp_path / "roots.json"
    worktree = claude_hook.repository(str(repositories["worktree"]), str(cache))
    main = claude_hook.repository(str(repositories["sub"]), str(cache))
    assert worktree["git_root"] == str(repositories["worktree"]) and main["git_root"] == str(repositories["a"])
    assert worktree["remote"] == main["remote"] == str(repositories["bare"])
    assert worktree["root_commit"] == main["root_commit"] and worktree["branch"] == "feature"
    assert list(json.loads(cache.read_text())) == [str(repositories["a"] / ".git")]
    # The config is parsed, not executed: other remotes, comments and quoting are handled.
    config = repositories["b"] / ".git" / "config"
    config.write_text('# mine\n[remote "upstream"]\n\turl = git@github.com:up/app.git\n'
                      '[remote "origin"] ; the fork\n\tURL = "git@github.com:me/app.git"\n')
    assert claude_hook.repository(str(repositories["b"]))["remote"] == "git@github.com:me/app.git"
    # Without git the root commit is unknown (and not cached); everything else is still read.
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    tool = claude_hook.repository(str(repositories["tool"]), str(tmp_path / "other.json"))
    assert (tool["git_root"], tool["root_commit"], tool["branch"]) == (str(repositories["tool"]), None, "main")
    assert not (tmp_path / "other.json").exists()
    # A shallow clone's roots are not the repository's: none is sent.
    monkeypatch.undo()
    history = tmp_path / "history"
    new_repository(history, "first")
    (history / "README").write_text("second")
    git("commit", "-q", "-am", "second", cwd=history)
    shallow = tmp_path / "shallow"
    git("clone", "-q", "--depth", "1", f"file://{history}", str(shallow), cwd=tmp_path)
    assert (shallow / ".git" / "shallow").exists()
    assert claude_hook.repository(str(shallow))["root_commit"] is None
    # Outside any repository: nothing but None.
    assert claude_hook.repository(str(tmp_path)) == {"git_root": None, "remote": None, "root_commit": None,
                                                      "branch": None}
