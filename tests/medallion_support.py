"""Shared inputs for the medallion tests."""
from typing import Any

SCOPE = {"graph_nodes": ["repo:muse"], "tags": ["project_state"]}


def document(scope: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "scope": scope or SCOPE,
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
