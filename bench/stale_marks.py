"""Stale marks over a generated project history: are the items whose files changed after they were
written flagged, and the others not?

A shop's code base (6 packages × 5 modules, their tests and docs, config files: 54 files, six of
them named utils.py) lives through eight weeks of Claude Code sessions. Each session asks about
some files (the prompt names them), reads and edits files (a few hot files take hundreds of edits,
some are rewritten whole with Write), answers naming what it touched, and sometimes stores a memory
or checkpoints a decision into the project's medallion (later decisions supersede earlier ones). In
weeks 5-7 files are renamed (`git mv`, `mv` into a folder, a whole package moved) and deleted
(`git rm`, `rm -r`); at the end of week 8 someone confirms ten flagged items still hold (they count
as written then), and a ninth week of sessions follows. Items name their files the way people do: the project path, the absolute
path, `./path`, the file name alone when it is unique, the end of the path for the utils.py files
(`billing/utils.py`), and in 5 % of mentions a bare `utils.py` that is ambiguous on purpose. Some
items name no file at all.

Everything goes through Winni's real paths: hook events (prompts, replies, PostToolUse of Edit,
MultiEdit, Write, Read, Bash) through POST /api/v1/capture/events, memories through
memory.services.memory_store, decisions through medallions.services (create/update). The events
are replayed in order, compressed in time (each one at its own "now").

Truth: an item is "changed" when a file it means (the file the generator had in mind) was edited,
rewritten, renamed or deleted after the item was written, by another session than the one that said
it (a session's own later edits carry out what it said). Flagged: core.anchors.marks names the
item. Two modes: `remote` (Winni cannot read the files: marks from captured edits only) and
`local` (the files exist under the project's root on this machine and the bench changes them as
the agent would: marks compare content hashes).

    .venv/bin/python bench/stale_marks.py --mode remote
    .venv/bin/python bench/stale_marks.py --mode local --seed 3

Data dir: WINNI_DATA_DIR (default /tmp/winni-bench-stale-marks); its project `stale-bench-*` is new
each run."""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, BENCH)
import _django  # noqa: E402

PACKAGES = ["billing", "orders", "auth", "reports", "shipping", "search"]
MODULES = ["models.py", "views.py", "utils.py", "service.py", "tasks.py"]
CONFIG = ["settings.toml", "Dockerfile", ".github/workflows/ci.yml", "README.md", "pyproject.toml", "Makefile"]
TOPICS = ["rounding of totals", "retry policy", "the session timeout", "pagination", "tax rates", "the cache key",
          "error messages", "the export format", "time zones", "permissions", "the rate limit", "logging"]
NO_FILE = ["We prefer small pull requests, reviewed the same day.", "Releases go out on Tuesdays after the standup.",
           "Use British spelling in user-facing text.", "The staging database is refreshed every night.",
           "Ask Priya before changing anything about invoices.", "Money amounts are integer cents everywhere."]


@dataclass
class History:
    """The generator's own account of what happened, for the truth."""

    step: int = 0
    files: set[str] = field(default_factory=set)
    changed: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # path → (step, session) of each change
    # key → (step written, files meant, the session that said it: "" for memories and decisions)
    items: dict[str, tuple[int, list[str], str]] = field(default_factory=dict)

    def tick(self) -> int:
        self.step += 1
        return self.step

    def change(self, path: str, session: str) -> None:
        self.changed.setdefault(path, []).append((self.tick(), session))

    def truth(self, key: str) -> bool | None:
        written, meant, said_in = self.items[key]
        if not meant:
            return None
        return any(step > written and (not said_in or by != said_in)
                   for path in meant for step, by in self.changed.get(path, []))


class Shop:
    def __init__(self, *, mode: str, seed: int) -> None:
        from core.projects import project_create

        self.rng = random.Random(seed)
        self.mode = mode
        # Remote: a path that does not exist on this machine (a new one each run: a path names one project).
        self.root = Path(tempfile.mkdtemp(prefix="stale-shop-")) if mode == "local" else Path(
            f"/home/dev/shop-{uuid.uuid4().hex[:8]}")
        self.client = _django.rest_client()
        self.project = project_create(name=f"stale-bench-{uuid.uuid4().hex[:6]}", path=str(self.root))
        self.history = History()
        self.session = ""
        self.medallion = None
        self.decisions: list[dict] = []
        files = [f"src/{p}/{m}" for p in PACKAGES for m in MODULES] + [f"tests/test_{p}.py" for p in PACKAGES] \
            + [f"docs/{p}.md" for p in PACKAGES] + CONFIG
        for path in files:
            self._disk_write(path, f"# {path}\n")
            self.history.files.add(path)
        # A few hot files take most edits (as real projects do).
        self.weights = {path: (40 if path in ("src/billing/service.py", "src/orders/models.py") else
                               6 if path.endswith(("views.py", "service.py")) else
                               1 if path.startswith("src/") else 0.3) for path in files}

    # --- the file system the agent works on ---

    def _disk_write(self, path: str, text: str, append: bool = False) -> None:
        if self.mode != "local":
            return
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a" if append else "w", encoding="utf-8") as handle:
            handle.write(text)

    def _disk_move(self, source: str, target: str) -> None:
        if self.mode == "local" and (self.root / source).exists():
            (self.root / target).parent.mkdir(parents=True, exist_ok=True)
            (self.root / source).rename(self.root / target)

    def _disk_delete(self, path: str) -> None:
        if self.mode == "local" and (self.root / path).exists():
            (self.root / path).unlink()

    # --- how people name a file ---

    def mention(self, path: str) -> str:
        name = path.rsplit("/", 1)[-1]
        unique = sum(1 for f in self.history.files if f.rsplit("/", 1)[-1] == name) == 1
        roll = self.rng.random()
        if roll < 0.05 and not unique:
            return name  # ambiguous on purpose: "utils.py"
        if roll < 0.2:
            return f"{self.root}/{path}"
        if roll < 0.25:
            return f"./{path}"
        if roll < 0.45:
            return name if unique else "/".join(path.split("/")[-2:])
        return path

    # --- hook events ---

    def post(self, **payload: object) -> None:
        body = {"payload": {"session_id": self.session, "cwd": str(self.root), "transcript_path": "", **payload},
                "agent": "claude", "repository": {"git_root": str(self.root)}, "git_branch": "main"}
        response = self.client.post("/api/v1/capture/events", body, format="json")
        assert response.status_code in (200, 201), response.content[:300]

    def turn_item(self, role: str, text: str, meant: list[str]) -> None:
        from conversations.models import Message

        if role == "user":
            self.post(hook_event_name="UserPromptSubmit", prompt=text)
        else:
            self.post(hook_event_name="Stop", last_assistant_message=text)
        message = Message.objects.filter(conversation__session_id=self.session).order_by("-turn_number").first()
        self.history.items[f"message:{message.pk}"] = (self.history.tick(), meant, self.session)

    def tool(self, name: str, tool_input: dict) -> None:
        self.post(hook_event_name="PostToolUse", tool_name=name, tool_input=tool_input,
                  tool_response={"success": True})

    def edit(self, path: str) -> None:
        self._disk_write(path, f"# change {self.history.step}\n", append=True)
        kind = self.rng.choice(["Edit", "Edit", "Edit", "MultiEdit", "Write"])
        shown = f"{self.root}/{path}" if self.rng.random() < 0.8 else path
        self.tool(kind, {"file_path": shown, "old_string": "a", "new_string": "b", "content": "x", "edits": []})
        self.history.change(path, self.session)

    def read(self, path: str) -> None:
        self.tool("Read", {"file_path": f"{self.root}/{path}"})

    def rename(self, source: str, target: str, *, command: str | None = None) -> None:
        self._disk_move(source, target)
        self.tool("Bash", {"command": command or f"git mv {source} {target}"})
        self.history.change(source, self.session)
        self.history.files.discard(source)
        self.history.files.add(target)
        self.weights[target] = self.weights.pop(source, 1)

    def delete(self, paths: list[str], command: str) -> None:
        for path in paths:
            self._disk_delete(path)
            self.history.change(path, self.session)
            self.history.files.discard(path)
            self.weights.pop(path, None)
        self.tool("Bash", {"command": command})

    # --- items written through the stores ---

    def memory(self, meant: list[str]) -> None:
        from memory.services import memory_store

        names = " and ".join(self.mention(path) for path in meant)
        text = (f"{self.rng.choice(TOPICS).capitalize()}: handled in {names}; "
                f"keep it there ({uuid.uuid4().hex[:6]}).") if meant else f"{self.rng.choice(NO_FILE)} ({uuid.uuid4().hex[:6]})"
        memory, _ = memory_store(content=text, project=self.project.slug)
        self.history.items[f"memory:{memory.pk}"] = (self.history.tick(), meant, "")

    def decide(self, meant: list[str]) -> None:
        from medallions import services

        number = len(self.decisions) + 1
        names = ", ".join(self.mention(path) for path in meant)
        statement = f"{self.rng.choice(TOPICS).capitalize()} is decided in {names}" if meant else \
            self.rng.choice(NO_FILE)
        if self.decisions and self.rng.random() < 0.3:
            self.rng.choice(self.decisions)["status"] = "superseded"  # a decision taken and later changed
        self.decisions.append({"id": f"D-{number}", "statement": statement, "rationale": "agreed in review",
                               "confidence": 0.8, "status": "active"})
        doc = {"scope": {"graph_nodes": [f"repo:{self.project.slug}"], "tags": []},
               "summary": {"high_level": "The shop.", "subsystems": []}, "decisions": self.decisions,
               "open_questions": [], "affordances": {"recommended_entry_points": [], "avoid_repeating": [],
                                                    "invariants": []}}
        if self.medallion is None:
            self.medallion = services.medallion_create(document=doc)
        else:
            services.medallion_update(medallion_id=self.medallion.pk, document=doc)
        self.history.items[f"decision:{self.medallion.pk}:D-{number}"] = (self.history.tick(), meant, "")

    # --- a session ---

    def pick(self, count: int) -> list[str]:
        """Files to edit: the hot ones most often."""
        paths = list(self.weights)
        return list(dict.fromkeys(self.rng.choices(paths, weights=[self.weights[p] for p in paths], k=count)))

    def named(self, count: int) -> list[str]:
        """Files an item is about: any file of the project, hot or not."""
        return self.rng.sample(sorted(self.weights), count)

    def work_session(self, week: int) -> None:
        self.session = f"week{week}-{uuid.uuid4().hex[:8]}"
        asked = self.named(self.rng.randint(1, 2))
        self.turn_item("user", f"Look at {self.rng.choice(TOPICS)} in "
                               f"{' and '.join(self.mention(p) for p in asked)}, something is off.", asked)
        for path in asked:
            self.read(path)
        touched = self.pick(self.rng.randint(1, 8))
        for path in touched:
            for _ in range(self.rng.randint(1, 6)):
                self.edit(path)
        self.turn_item("assistant", f"I changed {', '.join(self.mention(p) for p in touched)}; the tests pass.",
                       touched)
        if self.rng.random() < 0.5:
            self.turn_item("user", self.rng.choice(NO_FILE), [])
        if self.rng.random() < 0.6:
            self.memory(self.named(self.rng.randint(1, 2)) if self.rng.random() < 0.8 else [])
        if self.rng.random() < 0.35:
            self.decide(self.named(1) if self.rng.random() < 0.85 else [])


def run(mode: str, seed: int, sessions_per_week: int) -> dict:
    from core import anchors
    from core.models import Anchor

    shop = Shop(mode=mode, seed=seed)
    started = time.perf_counter()
    for week in range(1, 9):
        for _ in range(sessions_per_week):
            shop.work_session(week)
        shop.session = f"week{week}-maintenance-{uuid.uuid4().hex[:8]}"
        if week == 5:
            shop.rename("src/reports/views.py", "src/reports/pages.py")
            shop.rename("src/auth/tasks.py", "src/auth/jobs/tasks.py", command="mv src/auth/tasks.py src/auth/jobs/")
        if week == 6:
            moved = [p for p in list(shop.weights) if p.startswith("src/search/")]
            for path in moved:
                shop._disk_move(path, path.replace("src/search/", "src/find/"))
            shop.tool("Bash", {"command": "git mv src/search src/find"})
            for path in moved:
                shop.history.change(path, shop.session)
                shop.history.files.discard(path)
                shop.history.files.add(path.replace("src/search/", "src/find/"))
                shop.weights[path.replace("src/search/", "src/find/")] = shop.weights.pop(path)
        if week == 7:
            shop.delete(["src/shipping/tasks.py"], "git rm src/shipping/tasks.py")
            shop.delete([p for p in list(shop.weights) if p.startswith("docs/")], "rm -rf docs")
        if week == 8:
            # Someone confirms ten flagged items still hold: they count as written now.
            flagged_now = sorted(anchors.marks(list(shop.history.items)))
            for key in shop.rng.sample(flagged_now, min(10, len(flagged_now))):
                anchors.item_confirm(item=key, actor="bench")
                shop.history.items[key] = (shop.history.tick(), *shop.history.items[key][1:])
            for _ in range(sessions_per_week):
                shop.work_session(9)
    elapsed = time.perf_counter() - started
    keys = list(shop.history.items)
    found = anchors.marks(keys)
    flagged = set(found)
    basis: dict[str, int] = {}
    for marks in found.values():
        for mark in marks:
            basis[mark.basis] = basis.get(mark.basis, 0) + 1
    counts = {"changed": [0, 0], "unchanged": [0, 0], "no file": [0, 0]}
    wrong: list[dict] = []
    by_kind: dict[str, dict[str, list[int]]] = {}
    for key in keys:
        truth = shop.history.truth(key)
        group = "no file" if truth is None else "changed" if truth else "unchanged"
        counts[group][0] += 1
        counts[group][1] += key in flagged
        if (group == "changed") != (key in flagged) and len(wrong) < 8:
            wrong.append({"item": key, "truth": group, "meant": shop.history.items[key][1],
                          "anchored": sorted(Anchor.objects.filter(item_key=key).values_list("path", flat=True))})
        kind = key.split(":", 1)[0]
        by_kind.setdefault(kind, {"changed": [0, 0], "unchanged": [0, 0], "no file": [0, 0]})
        by_kind[kind][group][0] += 1
        by_kind[kind][group][1] += key in flagged
    edits = sum(len(steps) for steps in shop.history.changed.values())
    return {"mode": mode, "seed": seed, "items": len(keys), "file_changes": edits, "seconds": round(elapsed, 1),
            "marks_by_basis": basis,
            "flagged": {group: {"items": n, "flagged": f, "rate": round(f / n, 4) if n else None}
                        for group, (n, f) in counts.items()},
            "by_kind": {kind: {group: f"{f}/{n}" for group, (n, f) in groups.items()}
                        for kind, groups in by_kind.items()},
            "wrong": wrong}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=["remote", "local"], default="remote")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sessions-per-week", type=int, default=6)
    args = parser.parse_args()
    _django.setup("stale-marks")
    # Anchoring runs in the worker (core.tasks.anchors_sync); the bench has none, so its tasks run
    # in-process as they are queued (without this, nothing was anchored and nothing flagged).
    from winni_site.celery import app

    app.conf.task_always_eager = True
    print(json.dumps(run(args.mode, args.seed, args.sessions_per_week), indent=2))


if __name__ == "__main__":
    main()
