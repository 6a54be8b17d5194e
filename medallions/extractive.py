"""The offline `extractive` medallion writer (the default WINNI_MEDALLION_LLM_PROVIDER): builds a
medallion from the evidence with no model and no network, deterministically."""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from core import repeats
from core.decisions import (  # decision_statement: still read from here by its callers
    STRONG_DECISION,
    decision_statement,
    sentences,
    stated_decisions,
    stated_rules,
)
from core.paths import LONE_SURROGATE, clean_path, outside_project, path_area, project_path
from medallions import schema
from medallions.llm import Evidence, content_sections

BECAUSE = re.compile(r"\b(?:because|since|so that|as it|due to)\b\s*(.+)$", re.I)
TODO = re.compile(r"^\s*(?:[-*]\s*)?(?:TODO|FIXME|open question|unresolved|still open|not sure)\b[:\s-]*(.*)$", re.I)
BLOCKED_ON = re.compile(r"\b(?:blocked on|blocked by|waiting (?:for|on)|depends on)\s+(.+?)(?:[.?!]|$)", re.I)
HIGH = re.compile(r"\b(blocker|blocking|urgent|critical|must|asap)\b", re.I)
LOW = re.compile(r"\b(maybe|someday|nice to have|later|eventually|minor)\b", re.I)
DEAD_END = re.compile(r"\b(tried|did not work|didn't work|does not work|doesn't work|dead end|failed|reverted|gave up)\b", re.I)
# A file path in text: a Windows one (drive or UNC share, either slash), a POSIX one (absolute, `~/`,
# `./`, `../` or relative with a folder), or a bare file name with a known extension. A name may hold
# what undecodable bytes became (U+FFFD, lone surrogates).
_NAME = r"[\w.\ufffd\ud800-\udfff-]+"
PATH = re.compile(
    r"(?<![\w/.-])("
    rf"(?:[A-Za-z]:|\\\\[\w.$-]+)(?:[\\/]{_NAME})+"
    rf"|(?:~/|\.{{0,2}}/)?(?:{_NAME}/)+{_NAME}"
    r"|[\w-]+\.(?:py|js|ts|tsx|go|rs|java|rb|md|toml|yaml|yml|json|sql|sh|txt|cfg|ini|html|css|c|h|cpp)"
    r")(?![\w/\\])")
# A JSON string's escapes (a tool call is stored as JSON): read when the JSON itself is cut short.
JSON_ESCAPE = re.compile(r'\\(?:u[0-9a-fA-F]{4}|.)')
COMMAND = re.compile(r"(?:^\s*\$\s+(.+)$|`((?:\./|python|pytest|pip|npm|npx|git|make|docker|uv|cargo|go|manage\.py|\.venv/)[^`\n]*)`)", re.M)
ROLE_PREFIX = re.compile(r"^(user|assistant|system|tool|human|ai)\s*:\s*", re.I)
RESOLVED = re.compile(r"\b(Q-\d+)\b[^.\n]*\b(resolved|answered|done|closed|settled)\b|\b(resolved|answered|closed)\b[^.\n]*\b(Q-\d+)\b", re.I)
URL = re.compile(r"https?://\S+")

# Scanning more than this much text per evidence part gains little and costs time on huge inputs.
SCAN_CHARS = 400_000
MAX_DECISIONS = 30
MAX_QUESTIONS = 30
MAX_AFFORDANCES = 15


def _clip(text: str, limit: int = schema.MAX_LINE_CHARS) -> str:
    """One line of at most `limit` characters, storable: no NUL, no lone surrogate (PostgreSQL
    refuses both)."""
    text = " ".join(LONE_SURROGATE.sub("\ufffd", text.replace("\x00", " ")).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


NO_EVIDENCE = "No evidence recorded for this scope yet."
EARLIER = " Earlier: "  # between the summaries of successive sessions in high_level
COUNTS_TAIL = re.compile(r" \(\d+ decision\(s\), \d+ open question\(s\) recorded\.\)$")


def _with_counts(summary: str, decisions: list[Any], questions: list[Any]) -> str:
    if summary == NO_EVIDENCE:
        return summary
    tail = f" ({len(decisions)} decision(s), {len(questions)} open question(s) recorded.)"
    return _clip(summary, schema.MAX_TEXT_CHARS - len(tail)) + tail


def _normal(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def _questions(sentences: list[str]) -> list[str]:
    """Question sentences; a following "blocked on / waiting for …" sentence stays with its question."""
    found = []
    for index, sentence in enumerate(sentences):
        if sentence.endswith("?"):
            following = sentences[index + 1] if index + 1 < len(sentences) else ""
            found.append(f"{sentence} ({following})" if BLOCKED_ON.search(following) else sentence)
    return found


@dataclass
class _Turn:
    role: str
    text: str
    segment: int


def _turns(evidence: Evidence) -> list[_Turn]:
    """Transcript lines with their speaker when a line starts with `role:` (a conversation's
    messages arrive that way), else attributed to the previous speaker."""
    turns: list[_Turn] = []
    for number, segment in enumerate(evidence.transcripts):
        role = "user"
        for line in segment[:SCAN_CHARS].splitlines():
            match = ROLE_PREFIX.match(line)
            if match:
                role = match.group(1).lower().replace("human", "user").replace("ai", "assistant")
                turns.append(_Turn(role, line[match.end():], number))
            elif line.strip():
                if turns and turns[-1].role == role and turns[-1].segment == number:
                    turns[-1].text += "\n" + line
                else:
                    turns.append(_Turn(role, line, number))
    return turns


class ExtractiveLLM:
    """Builds a medallion from the evidence with no model and no network, deterministically:
    summary from the session summary (else the first request), decisions from statements of
    decision, open questions from TODOs and questions nobody answered, affordances from the files
    and commands mentioned. Empty evidence gives a minimal valid medallion."""

    provider = "extractive"
    model = "extractive-1"

    def generate(self, scope: dict[str, list[str]], evidence: Evidence) -> schema.Content:
        return schema.Content.model_validate(_fit(self._extract(evidence, first_decision=1, first_question=1)))

    def update(self, existing: dict[str, Any], new_evidence: Evidence) -> schema.Content:
        old = content_sections(existing)
        new = self._extract(new_evidence, first_decision=self._next_number(old["decisions"], "D"),
                            first_question=self._next_number(old["open_questions"], "Q"))
        text = self._all_text(new_evidence)
        resolved = {m.group(1) or m.group(4) for m in RESOLVED.finditer(text)}
        resolved = {r.upper() for r in resolved if r}
        known_decisions = {_normal(d["statement"]) for d in old["decisions"]}
        known_questions = {_normal(q["question"]) for q in old["open_questions"]}
        decisions = old["decisions"] + [d for d in new["decisions"] if _normal(d["statement"]) not in known_decisions]
        questions = [q for q in old["open_questions"] if q["id"].upper() not in resolved]
        questions += [q for q in new["open_questions"] if _normal(q["question"]) not in known_questions]
        subsystems = {s["name"]: s for s in old["summary"].get("subsystems", [])}
        for subsystem in new["summary"]["subsystems"]:
            subsystems[subsystem["name"]] = subsystem
        # The newest session first, then what was known before (cut when the text is full), each
        # once: a session checkpointed at every end of `claude -p --resume` brings the same start.
        earlier = COUNTS_TAIL.sub("", old["summary"].get("high_level", ""))
        latest = COUNTS_TAIL.sub("", new["summary"]["high_level"])
        if new_evidence.is_empty() or latest == NO_EVIDENCE:
            latest, earlier = earlier, ""
        elif earlier and earlier != NO_EVIDENCE:
            latest = EARLIER.join(repeats.unique([latest, *earlier.split(EARLIER)], schema.MAX_LIST_ITEMS))
        high_level = _with_counts(latest, decisions, questions)
        affordances = {
            key: repeats.unique(new["affordances"][key] + old["affordances"].get(key, []), schema.MAX_LIST_ITEMS)
            for key in ("recommended_entry_points", "avoid_repeating", "invariants")
        }
        return schema.Content.model_validate(_fit({
            "summary": {"high_level": high_level, "subsystems": list(subsystems.values())[: schema.MAX_LIST_ITEMS]},
            "decisions": decisions[-schema.MAX_LIST_ITEMS:],
            "open_questions": questions[-schema.MAX_LIST_ITEMS:],
            "affordances": affordances,
        }))

    @staticmethod
    def _next_number(items: list[dict[str, Any]], prefix: str) -> int:
        numbers = [int(m.group(1)) for item in items if (m := re.fullmatch(rf"{prefix}-(\d+)", item["id"]))]
        return max(numbers, default=0) + 1

    @staticmethod
    def _all_text(evidence: Evidence) -> str:
        return "\n".join([evidence.session_summary[:SCAN_CHARS], *(t[:SCAN_CHARS] for t in evidence.transcripts),
                          *(a[:SCAN_CHARS] for a in evidence.artefacts)])

    def _extract(self, evidence: Evidence, *, first_decision: int, first_question: int) -> dict[str, Any]:
        turns = _turns(evidence)
        prose = [evidence.session_summary[:SCAN_CHARS], *(t.text for t in turns)]
        all_text = self._all_text(evidence)
        said = [s for part in prose for s in sentences(part, SCAN_CHARS)]

        decisions: list[dict[str, Any]] = []
        for sentence in repeats.unique(stated_decisions(said), MAX_DECISIONS, restated=True):
            because = BECAUSE.search(sentence)
            decisions.append({
                "id": f"D-{first_decision + len(decisions):03d}",
                "statement": _clip(decision_statement(sentence)),
                "rationale": _clip(because.group(1)) if because else "stated in the session",
                "confidence": 0.8 if STRONG_DECISION.search(sentence) else 0.6,
                "status": "active",
            })

        questions: list[dict[str, Any]] = []
        for question in repeats.unique(self._open_questions(evidence, turns), MAX_QUESTIONS):
            blocked = BLOCKED_ON.search(question)
            priority = "high" if HIGH.search(question) else "low" if LOW.search(question) else "medium"
            questions.append({
                "id": f"Q-{first_question + len(questions):03d}",
                "question": _clip(question),
                "blocked_on": _clip(blocked.group(1)) if blocked else "",
                "priority": priority,
            })

        paths = _mentioned_paths(all_text, evidence.roots)
        entry_points = [_clip(p, 300) for p, _ in paths.most_common(MAX_AFFORDANCES)]
        commands = repeats.unique((_clip(m.group(1) or m.group(2), 300) for m in COMMAND.finditer(all_text)), MAX_AFFORDANCES)
        dead_ends = repeats.unique((_clip(s) for s in said if DEAD_END.search(s)), MAX_AFFORDANCES)
        invariants = repeats.unique((_clip(s) for s in stated_rules(said)), MAX_AFFORDANCES)
        return {
            "summary": {"high_level": self._high_level(evidence, turns, decisions, questions),
                        "subsystems": self._subsystems(paths, inside_only=bool(evidence.roots))},
            "decisions": decisions,
            "open_questions": questions,
            "affordances": {
                "recommended_entry_points": entry_points,
                "avoid_repeating": repeats.unique([f"already ran: {c}" for c in commands] + dead_ends, MAX_AFFORDANCES * 2),
                "invariants": invariants,
            },
        }

    @staticmethod
    def _open_questions(evidence: Evidence, turns: list[_Turn]) -> list[str]:
        found: list[str] = []
        for part in [evidence.session_summary, *evidence.artefacts]:
            for line in sentences(part, SCAN_CHARS):
                todo = TODO.match(line)
                if todo:
                    found.append(todo.group(0).strip(" -*"))
            found += _questions(sentences(part, SCAN_CHARS))
        # A question in a transcript counts as open unless someone else spoke after it (in that transcript).
        later_roles: dict[int, set[str]] = {}
        answered_at: list[bool] = []
        for turn in reversed(turns):
            roles = later_roles.setdefault(turn.segment, set())
            answered_at.append(bool(roles - {turn.role}))
            roles.add(turn.role)
        answered_at.reverse()
        for turn, answered in zip(turns, answered_at):
            for line in sentences(turn.text, SCAN_CHARS):
                if TODO.match(line):
                    found.append(line.strip(" -*"))
            if not answered:
                found += _questions(sentences(turn.text, SCAN_CHARS))
        return found

    @staticmethod
    def _high_level(evidence: Evidence, turns: list[_Turn], decisions: list[Any], questions: list[Any]) -> str:
        summary = " ".join(sentences(evidence.session_summary, SCAN_CHARS)[:6])
        if not summary:
            first_request = next((t.text for t in turns if t.role == "user" and t.text.strip()), "")
            summary = f"Session started with: {_clip(first_request, 600)}" if first_request else ""
        if not summary and evidence.artefacts:
            summary = f"Evidence: {len(evidence.artefacts)} artefact(s), no session summary."
        if not summary:
            return NO_EVIDENCE
        return _with_counts(summary, decisions, questions)

    @staticmethod
    def _subsystems(paths: Counter[str], *, inside_only: bool) -> list[dict[str, str]]:
        """One subsystem per top folder of the project the paths are in (named as the project
        knows them: core.paths). With the project's root known, absolute paths outside it (a
        library in a traceback, /tmp) are not the project's subsystems."""
        groups: dict[str, list[str]] = {}
        for path in paths:
            if inside_only and outside_project(path):
                continue
            name = _clip(path_area(path), schema.MAX_SCOPE_ITEM_CHARS)
            if name:
                groups.setdefault(name, []).append(path)
        return [
            {"name": name, "status": "in_progress", "notes": _clip("touched: " + ", ".join(files[:8]))}
            for name, files in list(groups.items())[:10]
        ]


# Keys of a tool call whose value is one file's path, whole (spaces included): Claude Code's
# tool_input.file_path / notebook_path and tool_response.filePath.
PATH_KEYS = ("file_path", "notebook_path", "filePath")


def _path_text(text: str) -> tuple[str, list[str]]:
    """The text with its JSON lines read (a captured tool call is stored as one line of JSON, its
    paths' backslashes escaped): a line's strings instead of the line, or, when the JSON was cut
    short, the line with its escapes decoded; and the paths its PATH_KEYS name."""
    lines: list[str] = []
    named: list[str] = []
    for line in text.splitlines():
        body = line[m.end():] if (m := ROLE_PREFIX.match(line)) else line
        if not body.lstrip().startswith(("{", "[")):
            lines.append(line)
            continue
        try:
            lines.extend(list(_strings(json.loads(body), named)))
        except (ValueError, RecursionError):  # cut short, or nested deeper than Python reads
            lines.append(JSON_ESCAPE.sub(_unescape, body))
    return "\n".join(lines), named


def _strings(value: Any, named: list[str]) -> Iterable[str]:
    """The strings in a JSON value; those under PATH_KEYS go to `named` instead."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in PATH_KEYS and isinstance(item, str):
                named.append(item)
            else:
                yield from _strings(item, named)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, named)


def _unescape(match: re.Match[str]) -> str:
    escape = match.group(0)
    if escape[1] == "u":
        return chr(int(escape[2:], 16))
    return {"n": "\n", "t": " ", "r": " ", "b": " ", "f": " "}.get(escape[1], escape[1])


def _mentioned_paths(text: str, roots: list[str]) -> Counter[str]:
    """The paths the text names, as the project knows them (core.paths.project_path); those that
    name nothing (`/`, a lone drive) are left out. A root written out in the text is taken off
    first, so a root with a space in it (`/Users/me/My Shop`) does not cut its paths in two."""
    text, named = _path_text(text)
    for root in sorted({clean_path(root) for root in roots} - {""}, key=len, reverse=True):
        text = re.sub(r"(?<![\w/.-])" + re.escape(root) + "/", " ", text)
    found = Counter(named + [match.group(1).rstrip(".,:;") for match in PATH.finditer(URL.sub(" ", text))])
    paths: Counter[str] = Counter()
    # Each distinct spelling is read once (a session names the same files again and again).
    for candidate, count in found.items():
        path = project_path(candidate, roots=roots)
        if path:
            paths[path] += count
    return paths


def _storable(text: Any, limit: int) -> str:
    """`text` as a field of at most `limit` characters that PostgreSQL stores (no NUL, no lone
    surrogate), trimmed; unchanged when it already is one."""
    text = LONE_SURROGATE.sub("\ufffd", str(text).replace("\x00", " ")).strip()
    return text if len(text) <= limit else _clip(text, limit)


def _fit(content: dict[str, Any]) -> dict[str, Any]:
    """The sections cut to what the schema accepts, whatever the evidence held: items without
    text dropped, text clipped to its field's length, lists to their length."""
    line, scope_item = schema.MAX_LINE_CHARS, schema.MAX_SCOPE_ITEM_CHARS
    summary = content.get("summary", {})
    subsystems: dict[str, dict[str, Any]] = {}
    for item in summary.get("subsystems", []):
        name = _storable(item.get("name", ""), scope_item)
        if name and name not in subsystems:
            subsystems[name] = {**item, "name": name, "notes": _storable(item.get("notes", ""), line)}
    decisions = [{**d, "id": _storable(d.get("id", ""), schema.MAX_ID_CHARS),
                  "statement": _storable(d.get("statement", ""), line),
                  "rationale": _storable(d.get("rationale", ""), line)}
                 for d in content.get("decisions", [])]
    questions = [{**q, "id": _storable(q.get("id", ""), schema.MAX_ID_CHARS),
                  "question": _storable(q.get("question", ""), line),
                  "blocked_on": _storable(q.get("blocked_on", ""), line)}
                 for q in content.get("open_questions", [])]
    affordances = {key: [text for text in (_storable(item, line) for item in items) if text][: schema.MAX_LIST_ITEMS]
                   for key, items in content.get("affordances", {}).items()}
    return {
        "summary": {"high_level": _storable(summary.get("high_level", ""), schema.MAX_TEXT_CHARS),
                    "subsystems": list(subsystems.values())[: schema.MAX_LIST_ITEMS]},
        "decisions": [d for d in decisions if d["id"] and d["statement"]][-schema.MAX_LIST_ITEMS:],
        "open_questions": [q for q in questions if q["id"] and q["question"]][-schema.MAX_LIST_ITEMS:],
        "affordances": affordances,
    }
