"""Shared inputs for the medallion tests (and bench/medallions.py)."""
import copy
from typing import Any

SCOPE = {"graph_nodes": ["repo:muse"], "tags": ["project_state"]}


def document(scope: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "scope": copy.deepcopy(scope or SCOPE),
        "summary": {"high_level": "Muse is a CLI for music notes.",
                    "subsystems": [{"name": "cli", "status": "stable", "notes": "argparse"}]},
        "decisions": [{"id": "D-001", "statement": "Use Python 3.11+", "rationale": "match types",
                       "confidence": 0.9, "status": "active"}],
        "open_questions": [{"id": "Q-001", "question": "Should we use async?", "blocked_on": "",
                            "priority": "medium"}],
        "affordances": {"recommended_entry_points": ["muse/cli.py"], "avoid_repeating": [], "invariants": []},
    }
    base.update(sections)
    return base


SESSION = {
    "session_summary": "We built the medallion store. We decided to use PostgreSQL arrays because GIN "
                       "indexes make subset queries fast. TODO: add a backup job.",
    "transcripts": [
        "user: Where do the scope queries live?\n"
        "assistant: In medallions/models.py, MedallionQuerySet.for_scope. Run `pytest -q tests` to check.\n"
        "user: Should the admin show diffs? This is blocked on the history view.",
    ],
    "artefacts": [{"path": "medallions/services.py", "kind": "diff", "content": "+ def checkpoint_session(...)"}],
}


WORDS = ("store scope medallion index query revision worker schema admin client token cache embed search "
         "migration backup celery redis postgres vector transcript hook session checkpoint").split()
FILES = ["medallions/services.py", "winni_site/settings/base.py", "README.md", "./bench/medallions.py",
         "src/app/main.ts", "docs/adr/0001-use-postgres.md", "Makefile.toml", "a/b/c/d/e/f.py"]


def generated_evidence(count: int = 200, seed: int = 4) -> list[dict[str, Any]]:
    """Varied evidence for the extractive provider: empty, whitespace, one field only, role-tagged
    and plain transcripts, object artefacts, unicode, braces, control characters, and huge inputs."""
    import random

    rng = random.Random(seed)

    def sentence() -> str:
        kind = rng.random()
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 14)))
        if kind < 0.15:
            return f"We decided to use {words} because {rng.choice(WORDS)} is faster."
        if kind < 0.3:
            return f"Should we {words}?"
        if kind < 0.4:
            return f"TODO: {words} (blocked on {rng.choice(WORDS)})"
        if kind < 0.5:
            return f"Edit {rng.choice(FILES)} and run `pytest -q {rng.choice(FILES)}`."
        if kind < 0.55:
            return f"The {words} must never be empty. It {rng.choice(['failed', 'did not work'])} twice."
        return words.capitalize() + rng.choice([".", "!", "", "…", " 😀.", " {\"k\": [1,2]}."])

    def text(n: int) -> str:
        return " ".join(sentence() for _ in range(n))

    special: list[dict[str, Any]] = [
        {},
        {"session_summary": ""},
        {"session_summary": "   \n\t  ", "transcripts": ["", "  "], "artefacts": []},
        {"transcripts": ["user: " + "x" * 200_000]},
        {"session_summary": text(20_000)},  # about 1.5 MB
        {"transcripts": [f"{rng.choice(['user', 'assistant'])}: {text(3)}" for _ in range(5_000)]},
        {"artefacts": [{"path": f, "kind": "diff", "content": text(4)} for f in FILES * 50]},
        {"session_summary": "?" * 5000},
        {"session_summary": "We decided " * 3000},
        {"session_summary": "\x00\x01\x02 control \x7f chars. Should we strip \x00?"},
        {"session_summary": "a" * 10_000 + "/" + "b" * 10_000 + ".py"},
        {"transcripts": [[{"role": "user", "content": "Should we ship?"}, {"role": "assistant", "content": "Yes."}]]},
        {"artefacts": [{"nested": {"deep": [1, 2, {"x": None}]}}, 42, None, True]},
        {"session_summary": "Q-001 resolved. " + text(5)},
        {"session_summary": "日本語のテキスト。決定しました？ Ünïcödé decided to use ß because ∑."},
    ]
    out = list(special)
    while len(out) < count:
        item: dict[str, Any] = {}
        if rng.random() < 0.7:
            item["session_summary"] = text(rng.randint(0, 30))
        if rng.random() < 0.6:
            item["transcripts"] = [
                "\n".join(f"{rng.choice(['user', 'assistant', 'tool', ''])}: {text(rng.randint(1, 4))}"
                          for _ in range(rng.randint(1, 30)))
                for _ in range(rng.randint(1, 3))
            ]
        if rng.random() < 0.5:
            item["artefacts"] = [rng.choice([text(2), {"path": rng.choice(FILES), "content": text(3)}])
                                 for _ in range(rng.randint(1, 6))]
        out.append(item)
    return out
