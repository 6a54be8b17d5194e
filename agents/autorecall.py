"""Automatic recall: what Winni knows about a prompt, as a short block the agent's model reads.

`context_for_prompt` is the one service behind every way in: the UserPromptSubmit hook (the block
goes into Claude Code's `additionalContext`), the MCP tool `winni_context` and REST
`POST /api/v1/recall/context`. It fans out over the stores of several apps (memories, the
project's medallions, past turns of other sessions, the answer cache), so it lives above the apps (agents/)
and reads them through their services.

What it does with a prompt:
1. Its words: the english lexemes of the prompt (as full-text search indexes them), less the
   generic vocabulary of coding-agent instructions (GENERIC_WORDS: "run", "test", "fix", "commit"…
   learnt from bench/autorecall_generic.txt's calibration half). A prompt with fewer than two other
   words gets nothing ("run the tests", "thanks", "continue" never search), nor one close in
   meaning to a generic instruction (agents/autorecall_generic.txt). Its time words ("what did
   we decide last week"), read relative to `as_of` (default now), follow winni_recall's rule
   (core.timerank): the named range boosts the candidates dated in or near it; the phrase itself
   is not one of the words an item must share; `time_filter` in the result says what was done.
2. Candidates: hybrid recall (core.recall.rank) over memories (the project's and the global ones)
   and past turns of the project's other sessions (this session's turns are already in the model's
   context, the prompt just captured among them); the active decisions, invariants and open
   questions of the project's newest medallions; a cached librarian answer to the same question.
3. The gate (docs/autorecall.md says how its thresholds were measured): the block is given only
   when some candidate shares two or more of the prompt's specific words, enough of their weight
   (each weighs by how rare it is in the store: `overlap`) with enough meaning (`similarity`,
   cosine of the embeddings), or is very close in meaning alone; an item sharing one of the
   prompt's names ("report-merge", a path) needs less of the meaning. A tool call counts the words
   its readable line shows (not its JSON keys, nor the name of the project it ran in), a session
   digest those of its lines less a prompt this one repeats; neither passes on meaning alone.
   Otherwise: an empty text, no header.
4. The block: the candidates in rank order (the medallions' decisions and invariants, recall's
   best three, then one per conversation; the medallions' open questions after the answers),
   a session digest only with what the items above it do not say, each a snippet cut
   around the matched words, with its
   source (kind, date, turn; the conversation, medallion or memory by a short id:
   core.shortref), until `max_chars` is spent. Items already injected in
   this session (and not reset by a compaction or /clear) are left out; what is injected is
   recorded (agents.models.Injection).
5. Use (WINNI_RECALL_USE_PRIOR): within the block, an item the agent kept ignoring for prompts
   like this one moves down and one it used moves up (agents.use.prior_for: a factor on its score,
   one query per prompt); what the block holds is chosen without it (prior_order)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from agents import use
from agents.models import Injection
from conversations import services as conversations
from core import anchors, paths, projects, repeats, searchable, shortref, timerank
from core.decisions import states_a_rule
from core.errors import InvalidInput
from core.logs import storage_op
from core.models import Project
from core.recall import Mode, answers_first, rank
from core.recall import repeats as says_again
from core.searchable import EmbeddingUnavailable, passage_shown
from core.validation import validate_int_range, validate_storable
from medallions import services as medallions
from memory import embeddings
from memory import services as memories
from memory.librarian import services as librarian

MAX_CHARS_MIN = 200
MAX_CHARS_MAX = 50_000
# The prompt's first characters are what is searched (a pasted log or file adds words, not meaning).
QUERY_CHARS = 2_000
# Candidates asked of hybrid recall, and medallions read for their items.
CANDIDATES = 20
MEDALLIONS = 3
# Characters of a candidate's text read for its words (a pasted 1 MB log is not read whole).
TEXT_CHARS = 20_000
# Characters of one item's snippet at most (a long turn is cut around its matched words).
SNIPPET_CHARS = 500
HEADER = ("# Winni recalled (from earlier sessions; each item names its source: follow up with "
          "dewey_get_conversation, winni_get or winni_recall)")
FILE_HEADER = "# Winni recalled about {file} (from earlier sessions; each item names its source)"

# The gate (docs/autorecall.md: chosen on bench/autorecall.py's measurements).
# An item passes when it shares at least OVERLAP_MIN of the prompt's specific word weight, in at
# least MIN_TERMS of its words, and is at least SIMILARITY_MIN close in meaning; or is
# SIMILARITY_ALONE close in meaning whatever its words. (One shared word opened the block for a
# sixth of a fresh set of generic instructions, "clear the cache" finding a turn about a cache.)
OVERLAP_MIN = 0.3
SIMILARITY_MIN = 0.4
SIMILARITY_ALONE = 0.6
# After the first item passes, the block carries the next ones while their recall score is at least
# this share of the best one's.
RELATIVE_MIN = 0.25
# A procedure question's (HOW_TO) stated rule must be this close in meaning (all-MiniLM-L6-v2: a
# how-to question and the rule that answers it 0.28-0.45, an unrelated rule of the project ≈ 0.1).
PROCEDURE_SIMILARITY_MIN = 0.2
# An item sharing one of the prompt's names (a hyphenated name, a path, a host: "report-merge",
# "ledger/export.py") needs only this closeness in meaning: the name says what the meaning of a
# short question against a long turn cannot ("What did we decide about retries of the report-merge
# job?" and the reply stating them: 0.35). Generic instructions name nothing of a project.
NAMED_SIMILARITY_MIN = 0.2
NAME = re.compile(r"\w[-./_]\w")  # a lexeme of a name: words joined by "-", "/", "." or "_"
# A prompt at least this close in meaning to a generic instruction (GENERIC_PROMPTS) gets nothing.
GENERIC_MAX = 0.55
# A prompt with fewer specific words than this ("perfect", "run mypy", "undo that") gets nothing
# but a cached answer, and an item must share this many of them to open the block (unless close in
# meaning alone): one word says too little about what is asked.
MIN_TERMS = 2
# After the LEAD best items, in recall's order wherever they come from, at most PER_SESSION items
# of one session come before every other session has had its own; the rest follow (evidence spread
# over several sessions needs a turn of each, and the best answer often has its best neighbour in
# its own session). Chosen on the tuning halves (docs/benchmarks.md, "Automatic recall": LoCoMo
# evidence among the first 3, no lead / 3: 49.5 / 62.5 %, LongMemEval_S at 4,000 and 2,000
# characters unchanged).
LEAD = 3
PER_SESSION = 1

# Lexemes (english stems) of generic coding-agent instructions: they say what to do now, not what
# was known before, so they neither open the gate nor count in an item's overlap. Learnt from the
# calibration half of bench/autorecall_generic.txt (every lexeme of those prompts), see
# docs/autorecall.md; bench/autorecall.py measures silence on the other half.
GENERIC_WORDS = frozenset("""
add ahead amend approach artifact back benchmark broken browser build bump case chang changelog
check ci code commit configur continu coverag databas dead debug delet depend dev didn diff differ
docstr done els enough entri error explain fail faster file first fix format function git go good
great handl hmm import increas inlin input instal job last left lgtm local lock log look main make
mark mean measur merg migrat next ok one open option output pin pleas previous print project pull
push readm rebas refactor regener remov renam request rerun reset retri revert right run save script
server ship show smaller sort sound split start stop suit summar sure tail test thank todo tri type
updat valid variabl verbos version work wrap write yes
""".split())


class Source(TypedDict, total=False):
    kind: str
    id: str
    date: str | None
    session_id: str | None
    conversation_id: str | None
    turn: int | None
    question_turn: int  # the turn of the question this one answers (folded into it)
    role: str
    medallion_id: str
    project: str | None
    ref: str  # how the block's line names its source: a short id (_short_names)


class Item(TypedDict):
    kind: str
    id: str
    score: float
    source: Source
    stale: list[str]  # what changed since in the files it names (core.anchors); empty: it holds


class ContextDict(TypedDict):
    text: str
    items: list[Item]
    gate: dict[str, Any]
    # What the prompt's time words did (core.timerank.TimePlan.report, as in winni_recall's answer);
    # None when the prompt names no time.
    time_filter: dict[str, Any] | None


@dataclass
class Candidate:
    kind: str  # memory, message, decision, invariant, question, answer
    id: str
    text: str
    source: Source
    score: float = 0.0  # the recall score (fused, times the time boost) that orders the block
    similarity: float | None = None
    overlap: float = 0.0
    snippet: str = ""
    # What the block shows instead of `text` (a tool call: one readable line, never its JSON).
    shown: str = ""
    lexemes: set[str] = field(default_factory=set)  # the prompt's lexemes it holds (_matched_lexemes)
    created: datetime | None = None
    # The question a past turn answers (core.recall.answers_first): its words count as the
    # answer's, and the block names it after the answer, short.
    asked: str = ""
    asked_id: str = ""
    asked_shown: str = ""  # what the block shows of `asked` (_block)
    # A session digest's parts (SessionDigest.sections): the block shows those that add to the
    # items before it (conversations.digest_lines).
    sections: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"


def validate_max_chars(value: Any) -> int:
    if value is None:
        return settings.WINNI_RECALL_INJECT_MAX_CHARS
    return validate_int_range(value, field="max_chars", low=MAX_CHARS_MIN, high=MAX_CHARS_MAX)


def _empty(reason: str, **gate: Any) -> ContextDict:
    return {"text": "", "items": [], "gate": {"injected": False, "reason": reason, **gate}, "time_filter": None}


def _project_of(project: Any) -> Project | None:
    """The project a name means (slug, name or alias), or None: unknown names answer from the
    whole store rather than fail."""
    if isinstance(project, Project):
        return project
    if isinstance(project, str) and project.strip():
        return projects.project_find(project.strip()[: projects.NAME_MAX])
    if project is not None and not isinstance(project, str):
        raise InvalidInput("project must be a project's slug or name", field="project")
    return None


# --- words ---------------------------------------------------------------------------------------


def _lexemes_of(texts: list[str]) -> list[set[str]]:
    """The english lexemes of each text, with the parts of its paths (as search indexes them)."""
    return memories.text_lexemes(texts=texts)


def _matched_lexemes(candidates: list[Candidate], wanted: set[str]) -> None:
    """Set each candidate's `lexemes`: those of its text among `wanted` (the prompt's, or a file
    path's; nothing else of them is read). Messages and memories: from their stored search_vector
    (the same lexemes, indexed when the row was written); re-parsing their texts (tool outputs of up
    to 20,000 characters) cost more than the rest of a prompt's recall (20 candidates: ≈ 40 ms of
    to_tsvector). Other kinds (medallion items, a cached answer), digests and tool calls: from the
    short texts the block shows of them. A tool call is stored as JSON, and its keys are words of
    its search_vector: `tool_name` gave every call the prompt's "name", `file_path` its "file"; the
    block shows the call as one line (conversations.toolcalls), so it counts the words that line
    holds. A digest counts its lines, not its heading (the project's name, "session digest") nor
    a prompt its session asked again."""
    stored = ("message", "memory")
    by_kind: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        from_stored = candidate.kind in stored and not (candidate.kind == "message" and candidate.shown
                                                        and candidate.source.get("role") == "tool")
        by_kind.setdefault(candidate.kind if from_stored else "", []).append(candidate)
    for kind, group in by_kind.items():
        if kind:
            found = memories.stored_lexemes(kind=kind, wanted=wanted,
                                            ids=[c.id for c in group] + [c.asked_id for c in group if c.asked_id])
            for candidate in group:
                candidate.lexemes = found.get(candidate.id, set()) | found.get(candidate.asked_id, set())
        else:
            shown = [c.shown if c.kind == "digest" else c.shown or c.text for c in group]
            for candidate, lexemes in zip(group, _lexemes_of([text[:TEXT_CHARS] for text in shown])):
                candidate.lexemes = lexemes & wanted


def _naming(project: Project | None, lexemes: set[str]) -> set[str]:
    """The prompt's lexemes that name the project it is asked in ("ember-docs": ember-doc, ember,
    doc), when it names it. A tool call of the project does not share them with the prompt: its
    paths and commands hold them because it ran in the project's folder ("Who owns the batch
    module of alder-cli?" shared the name "alder-cli" with every `Read /home/…/alder-cli/…`, so
    each passed with little of the meaning). A turn that names the project still shares it."""
    if project is None:
        return set()
    names = [name for name in _lexemes_of([project.name, project.slug]) if name]
    return set().union(*(name for name in names if name <= lexemes))


def _weights(lexemes: set[str], *, generic_too: bool = False) -> dict[str, float]:
    """Each specific lexeme's weight: its inverse document frequency among past turns (ANALYZE's
    statistics; a lexeme they do not list as common is rare). Generic words weigh nothing, unless
    `generic_too` (a procedure question: they are what it asks about)."""
    return memories.lexeme_weights(lexemes=[lexeme for lexeme in lexemes if generic_too or lexeme not in GENERIC_WORDS])


# A question of how to do something ("how do I run the tests here?", "what's the command to
# deploy?"). Made of generic words only, it would get nothing, like the instruction "run the
# tests"; but it asks what the project does, which a rule stated earlier answers.
HOW_TO = re.compile(r"^\W*(?:how\s+(?:do|does|did|should|can|could|would|to)\b|how's\b|"
                    r"what(?:'s|\s+is|\s+are|\s+was)\s+the\s+(?:command|commands|way|steps|procedure|process)\b|"
                    r"which\s+command)", re.I)


def _overlap(weights: dict[str, float], lexemes: set[str]) -> float:
    total = sum(weights.values())
    return sum(w for lexeme, w in weights.items() if lexeme in lexemes) / total if total else 0.0


_WORD = re.compile(r"\w[\w./-]*\w|\w")


def _snippet(text: str, matched: set[str], limit: int) -> str:
    """`text` cut to `limit` characters around its matched words: the window that holds the most
    words whose lexeme (an english stem: a prefix of the word, as a rule) is in `matched`."""
    text = " ".join(text[:TEXT_CHARS].split())
    if len(text) <= limit:
        return text
    prefixes = tuple(sorted(matched))
    hits = [found.start() for found in _WORD.finditer(text) if prefixes and found.group().lower().startswith(prefixes)]
    hits = hits[:500]
    start, best = 0, 0
    for position in hits:
        begin = max(0, position - limit // 4)
        count = sum(1 for other in hits if begin <= other < begin + limit - 20)
        if count > best:
            start, best = begin, count
    end = min(len(text), start + limit)
    start = max(0, end - limit)
    return ("… " if start else "") + text[start:end].strip() + (" …" if end < len(text) else "")


# --- candidates ----------------------------------------------------------------------------------


def _scopes(project: Project | None, session_id: str | None, project_only: bool = False,
            spoken_only: bool = False) -> dict[str, projects.Scope]:
    # Within a project: its past turns, its memories and the global ones unless project_only; a
    # token limited to projects reads only theirs (core.projects.search_scope, the one rule every
    # search follows). Superseded memories are not brought back (memory.models: current()).
    return {"message": conversations.message_recall_scope(project=project, excluding_session=session_id,
                                                          spoken_only=spoken_only),
            "memory": memories.memory_recall_scope(project=project, project_only=project_only),
            # Past sessions' digests (conversations.services.digest), the project's, not this session's.
            "digest": conversations.digest_recall_scope(project=project, excluding_session=session_id)}


def _date(value: Any) -> str | None:
    return value.date().isoformat() if value else None


def _recalled(query: str, project: Project | None, session_id: str | None,
              query_vector: list[float] | None, *, mode: Mode = "hybrid", spoken_only: bool = False,
              time: timerank.TimePlan | None = None, project_only: bool = False) -> list[Candidate]:
    """Hybrid recall's best memories and past turns (`spoken_only`: user and assistant turns, no
    tool calls) for `query`; `time` (its time words, core.timerank.plan) reweighs them as
    winni_recall does. `project_only`: no global memory."""
    scopes = _scopes(project, session_id, project_only, spoken_only)
    boosts = time is not None and time.boosts
    depth = CANDIDATES * timerank.DEPTH_FACTOR if boosts else CANDIDATES
    try:
        hits = rank(query=query, scopes=scopes, limit=depth, mode=mode,
                    query_vector=query_vector)
    except EmbeddingUnavailable:
        hits = rank(query=query, scopes=scopes, limit=depth, mode="fts")
    hits = answers_first(hits, query=query, scopes=scopes)  # a question shows as its answer

    def weight(hit: Any) -> float:
        return time.weight(hit.obj.created_at) if boosts and time is not None else 1.0

    if boosts and time is not None:  # (boosts: a time plan that boosts)
        hits = timerank.reweigh(hits, time, score=lambda hit: hit.fused,
                                created=lambda hit: hit.obj.created_at)[:CANDIDATES]
    conversation_ids = [hit.obj.conversation_id for hit in hits if hit.kind == "message"]
    by_id = conversations.conversations_by_id(ids=conversation_ids) if conversation_ids else {}
    found = []
    for hit in hits:
        obj, sections = hit.obj, {}
        if hit.kind == "message":
            conversation = by_id.get(obj.conversation_id)
            source: Source = {"kind": "message", "id": str(obj.id), "date": _date(obj.created_at),
                              "session_id": conversation.session_id if conversation else None,
                              "conversation_id": str(obj.conversation_id), "turn": obj.turn_number,
                              "role": obj.role}
            text = obj.content
            shown = ""
            if obj.role == "tool" and conversation is not None:
                obj.conversation = conversation  # its cwd: paths are shown relative to it
                shown = conversations.message_display(obj) or ""
            # A long turn found through one of its passages: the snippet is cut from that passage.
            shown = shown or passage_shown("message", obj, hit.passage) or ""
            if hit.question is not None:
                source["question_turn"] = hit.question.turn_number
        elif hit.kind == "digest":
            source = {"kind": "digest", "id": str(obj.pk), "date": _date(obj.started_at or obj.created_at),
                      "session_id": obj.session_id, "conversation_id": str(obj.conversation_id)}
            # An earlier prompt the session asked again is no evidence: it leaves the digest's
            # "Asked" (core.recall.repeats), and the digest counts the words of its lines.
            sections = {**obj.sections, "asked": [asked for asked in obj.sections.get("asked") or []
                                                  if not says_again(asked, query)]}
            text, shown = obj.text, "\n".join(conversations.digest_lines(sections))
        else:
            source = {"kind": "memory", "id": str(obj.pk), "date": _date(obj.created_at)}
            text, shown = obj.content, ""
        asked = hit.question
        found.append(Candidate(kind=hit.kind, id=source["id"], text=text, shown=shown, source=source,
                               score=hit.fused * weight(hit), similarity=hit.similarity, created=obj.created_at,
                               asked=asked.content if asked is not None else "",
                               asked_id=str(asked.pk) if asked is not None else "", sections=sections))
    if query_vector is not None:
        _stored_similarities(query_vector, [c for c in found if c.similarity is None])
        _fresh_similarities(query_vector, [c for c in found if c.similarity is None])
    return found


def _stored_similarities(query_vector: list[float], candidates: list[Candidate]) -> None:
    """Set the similarity of candidates that full-text search found but the vector side did not
    rank (outside its nearest rows), from their stored vectors: the gate reads every candidate's
    closeness in meaning, and "not among the nearest 50" is not "unrelated"."""
    if not candidates:
        return
    found = memories.stored_similarities(query_vector=query_vector, keys=[(c.kind, c.id) for c in candidates])
    for candidate in candidates:
        candidate.similarity = found.get((candidate.kind, candidate.id), candidate.similarity)


# Candidates with no stored vector yet get one computed for the prompt, at most this many (one
# pass of the model on ONNX Runtime: embeddings.embed_in_request).
FRESH_VECTORS = 8


def _fresh_similarities(query_vector: list[float], candidates: list[Candidate]) -> None:
    """The similarity of candidates written moments ago, which the worker has not embedded yet
    (they have no stored vector), from their text: the first prompt of a session must find what
    the previous session said even while the worker is behind (a restart, a busy queue). Bounded:
    the FRESH_VECTORS best of them; the stored vector, once there, is what later prompts read."""
    missing = sorted(candidates, key=lambda c: -c.score)[:FRESH_VECTORS]
    if not missing:
        return
    try:
        vectors = embeddings.embed_in_request([c.text for c in missing])
    except EmbeddingUnavailable:
        return
    for candidate, vector in zip(missing, vectors):
        candidate.similarity = sum(a * b for a, b in zip(query_vector, vector))


def _medallion_items(project: Project | None) -> list[Candidate]:
    """The active decisions, invariants and open questions of the project's newest medallions."""
    if project is None:
        return []
    found = []
    for medallion in medallions.medallions_active_for_project(project=project, limit=MEDALLIONS):
        base: Source = {"medallion_id": str(medallion.id), "date": _date(medallion.updated_at)}
        for decision in medallion.decisions or []:
            if decision.get("status", "active") not in ("active", "proposed"):
                continue
            text = f"Decision: {medallions.decision_statement(str(decision.get('statement', '')))}"
            if decision.get("rationale"):
                text += f" (why: {decision['rationale']})"
            item_id = f"{medallion.id}:{decision.get('id', '')}"
            found.append(Candidate(kind="decision", id=item_id, text=text,
                                   source={**base, "kind": "decision", "id": item_id}))
        for invariant in (medallion.affordances or {}).get("invariants", []):
            item_id = medallions.invariant_id(medallion.id, invariant)
            found.append(Candidate(kind="invariant", id=item_id, text=f"Invariant: {invariant}",
                                   source={**base, "kind": "invariant", "id": item_id}))
        for question in medallion.open_questions or []:
            item_id = f"{medallion.id}:{question.get('id', '')}"
            text = f"Open question: {question.get('question', '')}"
            if question.get("blocked_on"):
                text += f" (blocked on: {question['blocked_on']})"
            found.append(Candidate(kind="question", id=item_id, text=text,
                                   source={**base, "kind": "question", "id": item_id}))
    return found


def _cached_answer(prompt: str, project: Project | None, project_only: bool = False) -> Candidate | None:
    """The librarian's cached answer when the prompt repeats a cached question (after
    normalisation: case, spacing): the project's entry first, then a global one (unless
    `project_only`)."""
    entry = librarian.librarian_cached_answer(question=prompt, project=project, project_only=project_only)
    if entry is None:
        return None
    source: Source = {"kind": "answer", "id": str(entry.pk), "date": _date(entry.last_asked)}
    return Candidate(kind="answer", id=str(entry.pk), text=f"Cached answer to {entry.query_text!r}: {entry.answer}",
                     source=source, score=1.0, similarity=1.0, overlap=1.0)


_item_vectors: dict[str, list[float]] = {}
GENERIC_PROMPTS = Path(__file__).resolve().parent / "autorecall_generic.txt"
_generic_vectors: dict[str, Any] = {}


def _generic_similarity(query_vector: list[float] | None) -> float:
    """The prompt's cosine similarity to the nearest generic instruction of GENERIC_PROMPTS (their
    vectors are computed once per process and model)."""
    if query_vector is None:
        return 0.0
    import numpy as np

    model = embeddings.model_name()
    if model not in _generic_vectors:
        texts = [line.strip() for line in GENERIC_PROMPTS.read_text().splitlines()
                 if line.strip() and not line.startswith("#")]
        try:
            _generic_vectors[model] = np.asarray(embeddings.embed_in_request(texts), dtype=np.float32)
        except EmbeddingUnavailable:
            return 0.0
    return float(np.max(_generic_vectors[model] @ np.asarray(query_vector, dtype=np.float32)))


def _similarities(query_vector: list[float] | None, candidates: list[Candidate]) -> None:
    """Cosine similarity of the medallion items (recall gave the others theirs); their vectors are
    kept per process (an item's text does not change)."""
    if query_vector is None:
        return
    missing = [c.text for c in candidates if c.similarity is None and c.text not in _item_vectors]
    if missing:
        try:
            for text, embedded in zip(missing, embeddings.embed_in_request(missing)):
                _item_vectors[text] = embedded
        except EmbeddingUnavailable:
            return
        if len(_item_vectors) > 5_000:
            _item_vectors.clear()
    for candidate in candidates:
        vector = _item_vectors.get(candidate.text)
        if candidate.similarity is None and vector is not None:
            candidate.similarity = sum(a * b for a, b in zip(query_vector, vector))


# --- the service ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gate:
    """When a candidate is relevant enough to open the block (see the module docstring)."""

    overlap_min: float = OVERLAP_MIN
    similarity_min: float = SIMILARITY_MIN
    similarity_alone: float = SIMILARITY_ALONE
    relative_min: float = RELATIVE_MIN
    generic_max: float = GENERIC_MAX
    per_session: int = PER_SESSION
    min_terms: int = MIN_TERMS
    named_similarity_min: float = NAMED_SIMILARITY_MIN

    def passes(self, candidate: Candidate) -> bool:
        if candidate.kind == "answer":
            return True
        similarity = candidate.similarity if candidate.similarity is not None else 0.0
        named = any(NAME.search(lexeme) for lexeme in candidate.lexemes)
        alone = similarity >= self.similarity_alone and _meaning_speaks(candidate)
        return alone or (
            len(candidate.lexemes) >= self.min_terms and candidate.overlap >= self.overlap_min
            and similarity >= (self.named_similarity_min if named else self.similarity_min))

    def as_dict(self) -> dict[str, float]:
        return {"overlap_min": self.overlap_min, "similarity_min": self.similarity_min,
                "similarity_alone": self.similarity_alone, "relative_min": self.relative_min,
                "generic_max": self.generic_max, "per_session": self.per_session, "min_terms": self.min_terms,
                "named_similarity_min": self.named_similarity_min}


GATE = Gate()


def _meaning_speaks(candidate: Candidate) -> bool:
    """Whether a candidate's closeness in meaning alone may open the block. Not a tool call's: its
    vector is of a command, a path and a file's first lines, which share the project's name and
    stack with any question asked in it (`Read src/components/AuditTable.tsx` 0.61 from "What did
    we decide about the port of the ember-docs staging database?"), and its line says nothing of
    the prompt. Nor a digest's: a session's summary is close to a prompt that session asked
    before, which is no evidence (a prompt given again); both need shared words."""
    return candidate.kind != "digest" and candidate.source.get("role") != "tool"


def project_recall_set(*, project: Any, enabled: bool) -> Project:
    """Turn automatic recall on or off for one project's sessions (Project.settings["recall_inject"]);
    the MCP tool and REST endpoint still answer when asked."""
    with transaction.atomic():
        found = projects.project_get(name=project, field="project")
        found = Project.objects.select_for_update().get(pk=found.pk)
        found.settings = {**(found.settings or {}), "recall_inject": bool(enabled)}
        found.save(update_fields=["settings"])
    with storage_op("autorecall.project_set", project=found.slug) as log:
        log["enabled"] = bool(enabled)
    return found


def project_recall_enabled(project: Project | None) -> bool:
    return project is None or (project.settings or {}).get("recall_inject", True) is not False


def transcript_notes(messages: list[Any]) -> dict[Any, list[dict[str, Any]]]:
    """The admin transcript's "Winni added" notes: what automatic recall added to each message
    (a prompt, a tool call that touched a file)."""
    notes: dict[Any, list[dict[str, Any]]] = {}
    rows = list(Injection.objects.filter(message_id__in=[m.pk for m in messages]).order_by("created_at"))
    uses = use.injections_judge(rows)
    for injection in rows:
        count = len(injection.item_keys)
        what = f"{count} item{'s' if count != 1 else ''}" + (f" about {injection.file_path}" if injection.file_path else "")
        if injection.delivered:
            title = f"Winni added {what} ({len(injection.text)} characters)" + use.uses_said(uses.get(injection.pk, []))
        else:
            title = f"Winni prepared {what}, not delivered: {injection.undelivered_reason or 'the hook gave up waiting'}"
        notes.setdefault(injection.message_id, []).append(
            {"title": title, "text": injection.text, "delivered": injection.delivered})
    return notes


def injected_keys(session_id: str) -> set[str]:
    """The items already injected into a session since its last reset."""
    keys: set[str] = set()
    given = Injection.objects.filter(session_id=session_id, reset_at__isnull=True, delivered=True)
    for row in given.values_list("item_keys", flat=True):
        keys.update(row)
    return keys


def injections_reset(*, session_id: str) -> int:
    """Forget what was injected into a session (its context was compacted or cleared)."""
    with storage_op("autorecall.reset", session_id=session_id) as log:
        count = Injection.objects.filter(session_id=session_id, reset_at__isnull=True).update(reset_at=timezone.now())
        log["reset"] = count
    return count


def _line(candidate: Candidate) -> str:
    source = candidate.source
    parts = [candidate.kind if candidate.kind != "message" else "", source.get("date") or ""]
    # A turn is named by its conversation and turn (what dewey_get_conversation reads around it);
    # its session's id as well took ≈ 45 of each line's characters and named nothing more.
    if candidate.kind == "message":
        parts += [f"turn {source.get('turn')} ({source.get('role')})", _conversation_named(source)]
    elif candidate.kind == "digest":
        parts += [_conversation_named(source)]
    elif candidate.kind in ("decision", "invariant", "question"):
        parts += [f"medallion {source.get('ref') or source.get('medallion_id')}"]
    else:
        parts += [f"id {source.get('ref') or candidate.id}"]
    return f"- [{' · '.join(part for part in parts if part)}] {candidate.snippet}{_asked(candidate)}"


def _conversation_named(source: Source) -> str:
    return f"conversation {source.get('ref') or source.get('conversation_id')}"


# What each item's line names, and where its id is: a turn's and a digest's conversation, a
# medallion item's medallion, a memory itself.
_NAMED = {"message": "conversation_id", "digest": "conversation_id", "decision": "medallion_id",
          "invariant": "medallion_id", "question": "medallion_id", "memory": "id"}


def _short_names(candidates: list[Candidate]) -> None:
    """Set each item's `source["ref"]`: what its line names, by the first 8 hex digits of its id
    (core.shortref: the whole id when another's starts the same), which dewey_get_conversation and
    winni_get read back. The whole id took 28 characters more an item, room the evidence needs
    (docs/benchmarks.md)."""
    ids: dict[str, list[Any]] = {}
    for candidate in candidates:
        if candidate.kind in _NAMED:
            ids.setdefault(_NAMED[candidate.kind], []).append(candidate.source.get(_NAMED[candidate.kind]))
    refs = {**conversations.conversation_refs(ids=ids.get("conversation_id", [])),
            **shortref.refs(searchable.get("medallion").model, ids.get("medallion_id", [])),
            **shortref.refs(searchable.get("memory").model, ids.get("id", []))}
    for candidate in candidates:
        named = candidate.source.get(_NAMED.get(candidate.kind, ""))
        if named:
            candidate.source["ref"] = refs.get(str(named), str(named))


def _asked(candidate: Candidate) -> str:
    """What an answer's line adds about the question folded into it: the question, short (cut by
    _block around the prompt's words)."""
    if not candidate.asked_shown:
        return ""
    return f" (answering turn {candidate.source.get('question_turn')}: {candidate.asked_shown})"


# The question folded into its answer is named in at most this many characters: the answer is
# the evidence, the question says what it answers. A long question is cut around the prompt's
# words: a user who told the port and asked about the export ("I moved staging to port 5433 …
# Can you look at the export?") was named by its first 100 characters, which need not hold it.
ASKED_CHARS = 100


def context_for_prompt(
    *,
    prompt: Any,
    project: Any = None,
    session_id: Any = None,
    max_chars: Any = None,
    as_of: Any = None,
    record: bool = True,
    trigger: str = Injection.Trigger.CALL,
    message_id: Any = None,
    file_path: str = "",
    project_only: Any = False,
) -> ContextDict:
    """What Winni knows about `prompt`, within `max_chars` characters (default
    WINNI_RECALL_INJECT_MAX_CHARS), for a session of `project` (a slug, name or alias; unknown or
    none: the whole store); its memories come with the global ones unless `project_only`
    (core.projects.search_scope). `session_id`: that session's own turns are left out, and so
    are items already injected into it; with `record`, what is returned is recorded as an injection of it.
    Time words in the prompt are read relative to `as_of` (ISO 8601, default now; see time_plan).
    An empty or blank prompt gets an empty result; one over WINNI_MAX_CONTENT_BYTES is refused (413)."""
    max_chars = validate_max_chars(max_chars)
    time = time_plan(prompt, as_of)
    if not isinstance(project_only, bool):
        raise InvalidInput(projects.PROJECT_ONLY_INVALID, field="project_only")
    if session_id is not None and not isinstance(session_id, str):
        raise InvalidInput("session_id must be a string", field="session_id")
    if prompt is None or (isinstance(prompt, str) and not prompt.strip()):
        return _empty("empty prompt")
    if not isinstance(prompt, str):
        raise InvalidInput("prompt must be a string", field="prompt")
    validate_storable(prompt, field="prompt")
    found_project = _project_of(project)
    session_id = session_key(session_id)
    with storage_op("autorecall.context", session_id=session_id, project=found_project.slug if found_project else None,
                    trigger=trigger) as log:
        result = _context(prompt.strip(), found_project, session_id, max_chars, time, project_only=project_only)
        log.update(injected=bool(result["text"]), items=len(result["items"]), chars=len(result["text"]),
                   reason=result["gate"].get("reason"))
        if record:
            injection_record(result, session_id=session_id, project=found_project, trigger=trigger,
                             message_id=message_id, file_path=file_path)
    return result


def session_key(session_id: str | None) -> str | None:
    """A session id as injections are recorded under it (blank: none)."""
    return (session_id or "").strip() or None


def injection_record(result: ContextDict, *, session_id: str | None, project: Project | None, trigger: str,
                     message_id: Any = None, file_path: str = "") -> None:
    """Record a block given to a session (nothing for an empty one, or without a session): its items
    are not given to that session again until a reset (injected_keys, injections_reset). A block
    whose hook already said it gave up waiting (the report can overtake a slow answer) is recorded
    as not delivered."""
    if result["text"] and session_id:
        undelivered = ""
        if message_id is not None:
            undelivered = conversations.message_metadata_value(message_id=message_id, key=UNDELIVERED_KEY) or ""
        Injection.objects.create(
            session_id=session_id, trigger=trigger, project=project, message_id=message_id,
            file_path=file_path, text=result["text"], items=result["items"],
            item_keys=[f"{item['kind']}:{item['id']}" for item in result["items"]], gate=result["gate"],
            delivered=not undelivered, undelivered_reason=str(undelivered)[:300])


# The captured message's metadata key that says its recall block never reached the agent.
UNDELIVERED_KEY = "recall_undelivered"


def injections_undelivered(*, message_id: Any, reason: str) -> int:
    """The hook gave up waiting for the answer to the event captured as `message_id`: the blocks
    prepared for it never reached the agent. Marks them (and the message, for a block recorded
    after this report) not delivered; returns how many blocks were marked."""
    reason = reason.strip()[:300] or "the hook gave up waiting"
    with storage_op("autorecall.undelivered", message_id=str(message_id)) as log, transaction.atomic():
        if not conversations.message_metadata_set(message_id=message_id, key=UNDELIVERED_KEY, value=reason):
            log["marked"] = 0
            return 0
        marked = Injection.objects.filter(message_id=message_id).update(delivered=False, undelivered_reason=reason)
        log["marked"] = marked
    return marked


@dataclass
class Candidates:
    """Everything that could go into a prompt's block, with the signals the gate reads."""

    terms: list[str]
    weights: dict[str, float]
    prompt: str = ""
    # The prompt's cosine similarity to the nearest generic instruction (GENERIC_PROMPTS).
    generic: float = 0.0
    # A procedure question (HOW_TO) of generic words: its candidates are the stated rules only, and
    # its likeness to a generic instruction does not silence it.
    procedure: bool = False
    answer: Candidate | None = None
    medallion_items: list[Candidate] = field(default_factory=list)
    # The use prior's factor per candidate key (agents.use.prior_for; only items with a history).
    prior: dict[str, float] = field(default_factory=dict)
    recalled: list[Candidate] = field(default_factory=list)

    @property
    def everything(self) -> list[Candidate]:
        return ([self.answer] if self.answer else []) + self.medallion_items + self.recalled


def candidates_for(prompt: str, project: Project | None, session_id: str | None,
                   time: timerank.TimePlan | None = None, gate: Gate | None = None,
                   project_only: bool = False) -> Candidates:
    """The candidates for a (non-blank) prompt and their signals; none when the prompt has no
    specific word and repeats no cached question. `time`: the prompt's time words
    (time_plan); the phrase naming a range is left out of the words an item must share. `gate`:
    nothing is searched for a prompt it keeps everything from but a cached answer (a generic
    instruction, too few specific words: block_items), which is half of what a session's prompts
    are; without one (the gate's calibration, bench/autorecall.py) every prompt is searched.
    `project_only`: no global memory or cached answer."""
    query = prompt[:QUERY_CHARS]
    (prompt_lexemes,) = _lexemes_of([timerank.without_time_words(query, time) if time is not None else query])
    weights = _weights(prompt_lexemes)
    min_terms = gate.min_terms if gate is not None else 1
    # A procedure question of generic words only: they count, and only stated rules may answer.
    procedure = len(weights) < min_terms and bool(HOW_TO.match(query))
    if procedure:
        weights = _weights(prompt_lexemes, generic_too=True)
    searched = bool(weights) and len(weights) >= min_terms
    # The prompt's vector is computed by a helper thread while this one looks for a cached answer.
    embedding = embeddings.embed_query_beside(query) if searched else None
    found = Candidates(terms=sorted(weights, key=lambda lexeme: -weights[lexeme]), weights=weights,
                       answer=_cached_answer(prompt, project, project_only), prompt=prompt, procedure=procedure)
    if embedding is None:
        return found
    query_vector: list[float] | None
    try:
        query_vector = embedding()
    except EmbeddingUnavailable:
        query_vector = None
    found.generic = _generic_similarity(query_vector)
    if gate is not None and found.generic >= gate.generic_max and not procedure:
        return found
    found.recalled = _recalled(query, project, session_id, query_vector, time=time, project_only=project_only)
    found.medallion_items = _medallion_items(project)
    if procedure:
        found.recalled = [c for c in found.recalled if states_a_rule(c.text)]
        found.medallion_items = [c for c in found.medallion_items if c.kind in ("decision", "invariant")]
    everything = found.medallion_items + found.recalled
    _matched_lexemes(everything, set(weights))
    naming = _naming(project, set(weights))
    for candidate in everything:
        if candidate.source.get("role") == "tool":
            candidate.lexemes -= naming
    for candidate in everything:
        candidate.overlap = _overlap(weights, candidate.lexemes)
    _similarities(query_vector, found.medallion_items)
    for candidate in found.medallion_items:
        candidate.score = round(_item_score(candidate), 6)
    if settings.WINNI_RECALL_USE_PRIOR:
        found.prior = use.prior_for(keys=[c.key for c in everything], terms=found.terms,
                                    project_id=project.pk if project is not None else None)
    return found


def block_items(found: Candidates, gate: Gate = GATE, prior: dict[str, float] | None = None) -> list[Candidate]:
    """The candidates the block carries, in order (before leaving out what the session has had):
    the cached answer, the medallions' decisions and invariants that pass the gate, then recalled
    rows in rank order while their score holds up, once one of them passes (the best LEAD first,
    then one per conversation, the rows that pass the gate before the others of their
    conversation), then the medallions' open questions that pass. `prior` (found.prior: the use
    prior) reorders what the gate admitted (by_prior); which items are admitted is decided on
    recall's scores alone."""
    if (found.generic >= gate.generic_max and not found.procedure) or len(found.weights) < gate.min_terms:
        return [found.answer] if found.answer else []
    if found.procedure:
        # Its candidates are stated rules holding its words; a short question is never close in
        # meaning to a rule's long sentence (all-MiniLM-L6-v2: "How do I run the tests here?" and
        # "Rule: run the tests with `python -m pytest -q` from the repo root, never with tox." 0.29).
        gate = replace(gate, similarity_min=min(gate.similarity_min, PROCEDURE_SIMILARITY_MIN))
    prior = prior or {}
    medallion_items = sorted((c for c in found.medallion_items if gate.passes(c)), key=lambda c: -c.score)
    opened = [c for c in found.recalled if gate.passes(c)]
    top = max((c.score for c in opened), default=0.0)
    recalled = [c for c in found.recalled if c.score >= gate.relative_min * top and (c.overlap > 0 or gate.passes(c))] \
        if opened else []
    medallion_items, recalled = by_prior(medallion_items, prior), by_prior(recalled, prior)
    # A medallion's open question is a question: it comes after the answers (found using Winni:
    # "Open question: how many times does the export job retry?" led the block above the reply
    # that said it); its decisions and invariants, stated, lead.
    stated = [c for c in medallion_items if c.kind != "question"]
    asked = [c for c in medallion_items if c.kind == "question"]
    return (([found.answer] if found.answer else []) + stated
            + spread(passing_first(recalled, gate), gate.per_session) + asked)


def by_prior(candidates: list[Candidate], prior: dict[str, float]) -> list[Candidate]:
    """The candidates by their score times their use factor (agents.use.prior_for: 0.8–1.2, an item
    the agent kept ignoring for prompts like this one lower, one it used higher); unchanged when
    none of them has a history. Only the order moves: the gate decided before, and within a
    conversation its passing rows still lead (passing_first runs after)."""
    if not prior or not any(c.key in prior for c in candidates):
        return candidates
    return sorted(candidates, key=lambda c: -c.score * prior.get(c.key, 1.0))


def passing_first(candidates: list[Candidate], gate: Gate) -> list[Candidate]:
    """The candidates in order, except that within one conversation the rows that pass the gate
    come before those that only share a word with the prompt (each conversation keeps the places
    its rows had): a tool output naming the project ranked above the turn of the same conversation
    that answers took the lead of that conversation, and the budget the answer's room."""
    groups: dict[Any, list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(_conversation(candidate), []).append(candidate)
    rows = {key: iter(sorted(group, key=lambda c: not gate.passes(c))) for key, group in groups.items()}
    return [next(rows[_conversation(candidate)]) for candidate in candidates]


def _conversation(candidate: Candidate) -> Any:
    return candidate.source.get("conversation_id") or candidate.key


def spread(candidates: list[Candidate], per_session: int, lead: int = LEAD) -> list[Candidate]:
    """The candidates in order, except that after the first `lead`, a session's items after its
    first `per_session` (those among the lead count) wait until every session has had its first
    ones."""
    first: list[Candidate] = []
    later: list[Candidate] = []
    seen: dict[Any, int] = {}
    for index, candidate in enumerate(candidates):
        session = _conversation(candidate)
        seen[session] = seen.get(session, 0) + 1
        (first if index < lead or seen[session] <= per_session else later).append(candidate)
    return first + later


# --- file recall ---------------------------------------------------------------------------------

# Claude Code tools whose PostToolUse names the file they touch (tool_input.file_path).
FILE_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit")


def file_named(tool_input: Any, cwd: Any = None, roots: Any = ()) -> str:
    """The file a Read/Edit/Write call touches as the project knows it: relative to the project's
    root (`roots`, else `cwd`) when inside it, else as given (core.paths.project_path); "" when none."""
    if not isinstance(tool_input, dict):
        return ""
    # Claude Code and Gemini CLI name it file_path (NotebookEdit notebook_path), Copilot CLI path.
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    return paths.project_path(path, roots=roots, cwd=cwd)


def context_for_file(*, file_path: str, project: Any = None, session_id: str | None = None,
                     max_chars: Any = None, message_id: Any = None) -> ContextDict:
    """What Winni knows about a file the session touches (PostToolUse on Read, Edit, Write): the
    project's decisions, invariants and open questions, memories and past turns (said by the user
    or the agent, not tool output) that name it. Given once per file per session (until a
    compaction or /clear), recorded like a prompt's block."""
    max_chars = validate_max_chars(max_chars)
    name = file_path.rsplit("/", 1)[-1]
    if not name or "." not in name.strip("."):
        return _empty("no file name to look for")
    found_project = _project_of(project)
    with storage_op("autorecall.file", session_id=session_id, file=file_path[:200]) as log:
        if session_id and Injection.objects.filter(session_id=session_id, file_path=file_path,
                                                   reset_at__isnull=True).exists():
            return _empty("this file's recall was given to this session already")
        result = _file_context(file_path, name, found_project, session_id, max_chars)
        log.update(injected=bool(result["text"]), items=len(result["items"]))
        injection_record(result, session_id=session_id, project=found_project, trigger=Injection.Trigger.FILE,
                         message_id=message_id, file_path=file_path)
    return result


def _file_context(file_path: str, name: str, project: Project | None, session_id: str | None,
                  max_chars: int) -> ContextDict:
    (lexemes,) = _lexemes_of([file_path])
    weights = {lexeme: 1.0 for lexeme in lexemes}
    everything = _medallion_items(project) + _recalled(file_path, project, session_id, None, mode="fts",
                                                       spoken_only=True)
    _matched_lexemes(everything, set(weights))
    # Names the file: its path or its name as written (a word boundary before it).
    pattern = re.compile(r"(?<![\w.-])(?:[\w.-]+/)*" + re.escape(name) + r"\b")
    naming = [c for c in everything if pattern.search(c.text)]
    gate: dict[str, Any] = {"file": file_path, "candidates": len(everything), "naming": len(naming)}
    if not naming:
        return _empty("nothing names this file", **gate)
    already = injected_keys(session_id) if session_id else set()
    fresh = [c for c in naming if c.key not in already]
    gate["repeated"] = len(naming) - len(fresh)
    if not fresh:
        return _empty("everything naming this file was injected into this session already", **gate)
    result = _block(fresh, weights, max_chars, gate, header=FILE_HEADER.format(file=file_path))
    return result


def time_plan(prompt: Any, as_of: Any = None) -> timerank.TimePlan:
    """The prompt's time words read relative to `as_of` (an error naming as_of when it is not ISO
    8601), as winni_recall reads a query's."""
    return timerank.plan(prompt[:QUERY_CHARS] if isinstance(prompt, str) else "", as_of=as_of)


def _context(prompt: str, project: Project | None, session_id: str | None, max_chars: int,
             time: timerank.TimePlan | None = None, project_only: bool = False) -> ContextDict:
    found = candidates_for(prompt, project, session_id, time, gate=GATE, project_only=project_only)
    result = _gated(found, session_id, max_chars)
    if time is not None:
        # An order question ("which did we do first") lists the block's items oldest first, as
        # winni_recall's time_filter.timeline does for its hits.
        by_id = {c.id: c for c in found.everything}
        placed = [by_id[item["id"]] for item in result["items"] if item["id"] in by_id]
        timeline = timerank.timeline(placed, lambda c: c.created, lambda c: c.id) if time.order else None
        result["time_filter"] = time.report(timeline)
    return result


def _gated(found: Candidates, session_id: str | None, max_chars: int) -> ContextDict:
    everything = found.everything
    gate: dict[str, Any] = {
        "terms": found.terms[:12], "thresholds": GATE.as_dict(), "candidates": len(everything),
        "top_similarity": round(max((c.similarity or 0.0 for c in everything), default=0.0), 4),
        "top_overlap": round(max((c.overlap for c in everything if c.kind != "answer"), default=0.0), 4),
    }
    if not found.weights and found.answer is None:
        return _empty("no specific words in the prompt", **gate)
    gate["generic_similarity"] = round(found.generic, 4)
    if found.generic >= GATE.generic_max and not found.procedure and found.answer is None:
        return _empty("a generic instruction", **gate)
    if len(found.weights) < GATE.min_terms and found.answer is None:
        return _empty("too few specific words in the prompt", **gate)
    if found.procedure:
        gate["procedure"] = True  # a how-to question of generic words: stated rules only
    ordered = block_items(found)
    if not ordered:
        return _empty("no stated rule answers this how-to question" if found.procedure
                      else "nothing relevant enough", **gate)
    already = injected_keys(session_id) if session_id else set()
    fresh = [c for c in ordered if c.key not in already]
    gate["repeated"] = len(ordered) - len(fresh)
    if not fresh:
        return _empty("everything relevant was injected into this session already", **gate)
    return _block(fresh, found.weights, max_chars, gate, order=prior_order(found))


def prior_order(found: Candidates) -> list[str] | None:
    """The block's items in the order the use prior gives them (None without a prior): _block
    chooses what fits in recall's order, then shows it in this one, so the prior moves items up
    and down the block and never in or out of it."""
    return [c.key for c in block_items(found, prior=found.prior)] if found.prior else None


def _block(fresh: list[Candidate], weights: dict[str, float], max_chars: int, gate: dict[str, Any],
           header: str = HEADER, order: list[str] | None = None) -> ContextDict:
    """The block of the candidates that fit in `max_chars`, chosen in their order; shown in
    `order` (item keys: prior_order) when given, possibly stale items after those that hold."""
    lines: list[str] = []
    items: list[Item] = []
    shown: list[set[str]] = []  # the words of each item given, to leave out one that repeats it
    used = len(header) + 1
    # An item about a file that changed since it was written says so and comes after those that hold.
    stale = anchors.marks([c.key for c in fresh])
    fresh = anchors.holding_first(fresh, lambda c: c.key, stale)
    _short_names(fresh)
    for candidate in fresh:
        candidate.snippet = ""
        matched = {lexeme for lexeme in candidate.lexemes if lexeme in weights}
        candidate.asked_shown = _snippet(candidate.asked, matched, ASKED_CHARS) if candidate.asked else ""
        # What is left for its text once its source line ("- [date · turn … · conversation …] ") and
        # the marks of a cut snippet ("… ", " …") are counted.
        room = max_chars - used - 1 - (len(_line(candidate)) - len(_asked(candidate))) - 4
        if room < 60:
            break
        if room - len(_asked(candidate)) < 60:
            candidate.asked_shown = ""  # the answer is the evidence: its question gives way first
        room -= len(_asked(candidate))
        if candidate.sections:
            # A digest shows what it adds: not the answer or the decision an item above gave, nor
            # its heading (the source line dates it); none of it when only its question is left.
            candidate.shown = "\n".join(conversations.digest_lines(candidate.sections, given=shown))
            if not candidate.shown:
                continue
        candidate.snippet = _snippet(candidate.shown or candidate.text, matched, min(SNIPPET_CHARS, room))
        # An item saying what one already given says is left out (core.repeats), its room kept.
        words = repeats.words(candidate.snippet)
        if repeats.repeats(words, shown):
            continue
        line = _line(candidate)
        marks = stale.get(candidate.key, [])
        if marks:
            line += "\n  ⚠ possibly stale: " + "; ".join(mark.text for mark in marks[:3])
        if used + len(line) + 1 > max_chars:
            continue
        lines.append(line)
        shown.append(words)
        used += len(line) + 1
        items.append({"kind": candidate.kind, "id": candidate.id, "score": round(candidate.score, 6),
                      "source": candidate.source, "stale": [mark.text for mark in marks]})
    if not items:
        return _empty("max_chars leaves no room", **gate)
    if order:
        rank = {key: index for index, key in enumerate(order)}
        placed = sorted(zip(lines, items), key=lambda entry: (bool(entry[1]["stale"]),
                                                              rank.get(f"{entry[1]['kind']}:{entry[1]['id']}", len(rank))))
        lines, items = [line for line, _ in placed], [item for _, item in placed]
    return {"text": header + "\n" + "\n".join(lines), "items": items,
            "gate": {"injected": True, "reason": "relevant items found", **gate}, "time_filter": None}


def _item_score(candidate: Candidate) -> float:
    """A medallion item's score: its word overlap and closeness in meaning, averaged."""
    return (candidate.overlap + (candidate.similarity or 0.0)) / 2


# A prompt of the kind the hooks send: the warm-up runs what answering it runs.
WARM_UP_PROMPT = "What did we decide last week about how the report-merge job retries?"
# What the warm-up took, for /healthz (None before it ran in this process).
warm_up_report: dict[str, Any] | None = None


def recall_warm_up() -> dict[str, Any]:
    """Load and run, once, everything the first prompt of a session would otherwise pay for: the
    embedding model (ONNX Runtime), the generic prompts' vectors, the time-word parser, the
    database connection and the recall statements. The web process calls it before it accepts
    requests (winni_site.asgi), so no hook request waits for a load: the first prompts after a start
    took 24 s and 3.5 s and missed the hook's timeout. Nothing is recorded; a failure is logged and
    reported, never raised (a web process without recall still serves everything else)."""
    global warm_up_report
    with storage_op("autorecall.warm_up") as log:
        try:
            embeddings.warm_up(1)
            context_for_prompt(prompt=WARM_UP_PROMPT, record=False)
            log["status"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported in /healthz and the log
            log.update(status="error", error=f"{type(exc).__name__}: {exc}"[:300])
        finally:
            connection.close()  # made on the lifespan's thread, which serves no request
    warm_up_report = {key: log[key] for key in ("status", "duration_ms", "error") if key in log}
    return warm_up_report
