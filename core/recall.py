"""Ranked search over every searchable kind: `rank` (the engine's entry point) and `recall` (the
service behind the MCP tool `winni_recall`, REST `/api/v1/recall`, the admin's search page and the
answer cache's misses).

Each kind contributes its BM25 full-text hits and its nearest vectors (the active embedding model);
the engine fuses them (min-max scaled scores, weighted). The engine lives in the memory app (it
owns the vectors) and installs itself here (`install_engine`, from its AppConfig.ready), so this
module, like every caller of `rank`, needs no app: what it knows about a kind (its filters, the
rows around a hit, extra hit fields) comes from the registry in core.searchable."""
from __future__ import annotations

import re
from typing import Any, Literal, Protocol, TypedDict, TypeGuard, cast, get_args

from django.core.exceptions import ImproperlyConfigured

from core import anchors, projects, searchable, shortref, timerank
from core.errors import InvalidInput, NotFound
from core.logs import storage_op
from core.projects import Scope
from core.searchable import EmbeddingUnavailable, Hit
from core.validation import NOT_ONE_OF, parse_date_range, parse_uuid, shown_value, validate_query

Mode = Literal["fts", "semantic", "hybrid"]
MODES: tuple[str, ...] = get_args(Mode)


def is_mode(value: object) -> TypeGuard[Mode]:
    return value in MODES
LIMIT_DEFAULT = 10
LIMIT_MAX = 100
# A question about the asker's own life ("how many hours have I spent…", "which book did I finish
# a week ago") is answered by what the asker said; the other side's replies echo its words at
# length and crowd the asker's turns out of the page. Such a question (first person singular, not
# addressing "you") weighs the user's turns SELF_BOOST more (0: off).
SELF_BOOST = 1.0
_SELF = re.compile(r"\bI\b|\bI'(?:m|ve|d|ll)\b|\b(?:[Mm]y|[Mm]e|[Mm]ine|[Mm]yself)\b")
_YOU = re.compile(r"\byou(?:r|rs|rself|'re|'ve|'d|'ll)?\b", re.IGNORECASE)
# A request's "me" ("remind me what we settled", "tell me which port") is not a question about the
# asker's doings: the answer is whoever stated it (in a coding agent's history, often the agent).
_REQUEST = re.compile(r"\b(?:remind|tell|show|give|help|let)\s+me\b", re.IGNORECASE)


def asks_about_self(query: str) -> bool:
    """The query asks about the asker's own doings ("did I", "my"), not about what "you" said."""
    return SELF_BOOST > 0 and bool(_SELF.search(_REQUEST.sub(" ", query))) and not _YOU.search(query)


SNIPPET_CHARS = 300
TEXT_CHARS = 2000
# A compact row's one line (detail="compact"): enough to tell which hit to open.
LINE_CHARS = 120
Detail = Literal["compact", "full"]
DETAILS: tuple[str, ...] = get_args(Detail)


class Engine(Protocol):
    def __call__(self, *, query: str, scopes: dict[str, Scope], limit: int, offset: int = 0, mode: Mode = "hybrid",
                 query_vector: list[float] | None = None, attach: bool = True) -> list[Hit]: ...


_engine: Engine | None = None


def install_engine(engine: Engine) -> None:
    global _engine
    _engine = engine


# Superseded rows are dropped after ranking (a filter inside the engine would make every search a
# filtered one: exact scope counts and no table-wide term frequencies). The engine is asked for
# more than the page, and for more again (×4) if too many were dropped, up to this depth.
STALE_DEPTH_MAX = 1000


def rank(*, query: str, scopes: dict[str, Scope], limit: int, offset: int = 0, mode: Mode = "hybrid",
         query_vector: list[float] | None = None, attach: bool = True, include_superseded: bool = False) -> list[Hit]:
    """Rank rows of several kinds for `query`: `scopes` maps each kind to the rows it may return
    (core.projects.Scope, made by ProjectFilter.scope). semantic/hybrid embed the query (or use
    `query_vector`); if the provider is down, hybrid degrades to fts and semantic raises
    EmbeddingUnavailable. In hybrid mode each kind's registered `surround` passes score to the rows
    around a hit. `attach` loads each hit's row into `Hit.obj` (and drops rows deleted meanwhile);
    False gives keys and scores only. Rows that no longer hold (a superseded memory, a medallion
    that is not active: each kind's registered `current`) are left out unless include_superseded."""
    if _engine is None:
        raise ImproperlyConfigured("no search engine is installed: the memory app installs it (INSTALLED_APPS)")
    stale_kinds = [] if include_superseded else [kind for kind in scopes if searchable.get(kind).current is not None]
    if not stale_kinds:
        return _engine(query=query, scopes=scopes, limit=limit, offset=offset, mode=mode,
                       query_vector=query_vector, attach=attach)
    wanted = offset + limit
    depth = wanted + max(wanted, 10)
    while True:
        hits = _engine(query=query, scopes=scopes, limit=depth, offset=0, mode=mode,
                       query_vector=query_vector, attach=attach)
        kept = current_hits(hits, scopes=scopes, attach=attach)
        if len(kept) >= wanted or len(hits) < depth or depth >= STALE_DEPTH_MAX:
            return kept[offset:wanted]
        depth = min(depth * 4, STALE_DEPTH_MAX)


def current_hits(hits: list[Hit], *, scopes: dict[str, Scope] | None = None, attach: bool = True) -> list[Hit]:
    """`hits` without the rows that no longer hold (see Searchable.current), best first. A stale
    hit whose kind names successors hands its score to its successor when that one is in the
    kind's scope (when `scopes` is given) and scored lower or not found: the query matched the old
    fact, and the successor is what holds now."""
    by_kind: dict[str, list[str]] = {}
    for hit in hits:
        if searchable.get(hit.kind).current is not None:
            by_kind.setdefault(hit.kind, []).append(hit.key)
    if not by_kind:
        return hits
    holding: set[tuple[str, str]] = set()
    for kind, keys in by_kind.items():
        model = searchable.get(kind).model
        rows = searchable.current_only(kind, model._default_manager.filter(pk__in=keys)).values_list("pk", flat=True)
        holding.update((kind, str(pk)) for pk in rows)
    kept = [hit for hit in hits if hit.kind not in by_kind or (hit.kind, hit.key) in holding]
    if scopes is None:
        return kept
    by_key = {(hit.kind, hit.key): hit for hit in kept}
    changed = False
    for kind, keys in by_kind.items():
        spec = searchable.get(kind)
        stale = [key for key in keys if (kind, key) not in holding]
        if spec.successors is None or not stale or kind not in scopes:
            continue
        successor = spec.successors(stale)
        reachable = {str(pk): row for pk, row in (
            (row.pk, row) for row in searchable.current_only(kind, scopes[kind].rows).filter(
                pk__in=set(successor.values())))}
        for hit in hits:
            new_key = successor.get(hit.key) if hit.kind == kind else None
            if new_key is None or new_key not in reachable:
                continue
            known = by_key.get((kind, new_key))
            if known is None:
                by_key[(kind, new_key)] = Hit(kind=kind, key=new_key, fused=hit.fused,
                                              obj=reachable[new_key] if attach else None)
                changed = True
            elif hit.fused > known.fused:
                known.fused = hit.fused
                changed = True
    if not changed:
        return kept
    return sorted(by_key.values(), key=lambda hit: -hit.fused)


# An earlier prompt whose words are (nearly) the query's is the query asked before, not evidence:
# its share of words in common (Jaccard) at least this much.
REPEAT_MIN = 0.8
# The share of a question's score its answer takes when the question folds into it: the question
# found the round, but it is the answer that must hold the evidence (1: the round ranks at the
# better of the two). Chosen on the tuning half of bench/decisions.py (0.5 / 0.75 / 1: decision
# first 60.6 / 54.5 / 51.5 %), kept because its checking half rose too (docs/benchmarks.md).
# What the question's turn states besides asking, when the query found it there (its kind's
# `states`), is evidence itself and keeps its score: "I got the JR pass last week. What should I
# see in Kyoto?" for a question about the pass.
QUESTION_SHARE = 0.5
# Recall ranks this many times the page before folding questions into their answers.
ROUND_DEPTH_FACTOR = 2
_WORDS = re.compile(r"\w+")


def repeats(text: str, query: str) -> bool:
    """`text` says what `query` says, word for word (case, order and punctuation aside)."""
    said, asked = set(_WORDS.findall(text.lower()[:2000])), set(_WORDS.findall(query.lower()))
    return bool(said and asked) and len(said & asked) / len(said | asked) >= REPEAT_MIN


def _same_text_key(hit: Hit) -> str:
    return " ".join((searchable.get(hit.kind).text(hit.obj) or "")[:TEXT_CHARS].lower().split())


def question_share(hit: Hit, query: str) -> float:
    """The share of a question's score that its round keeps (QUESTION_SHARE for what it asks, all
    of it for what it states)."""
    states = searchable.get(hit.kind).states
    stated = states(hit.obj, query) if states is not None and hit.obj is not None else 0.0
    return QUESTION_SHARE + (1 - QUESTION_SHARE) * stated


def answers_first(hits: list[Hit], *, query: str, scopes: dict[str, Scope] | None = None) -> list[Hit]:
    """The one ranking rule for questions and answers (automatic recall, winni_recall and REST,
    the admin's search), on attached hits, best first:
    - a question (a row its kind's `answers` names: a user turn that asks) and the row answering
      it are one round: the round ranks at the better of the answer's score and the question's
      share of its own (question_share), and shows as the answer, with the question folded into
      it (`Hit.question`);
    - a question that merely repeats `query` is not evidence: it is dropped, its answer stays
      (with the repeat's score, without the repeat);
    - a row that echoes (its kind's `echoes`: an agent's search quoting a question, a prompt that
      repeats `query` without asking) is not evidence either: it is dropped, and lends its round
      nothing (what it found is stored and ranks on its own);
    - rows with the same text (a tool output read twice, a reply stored twice) show once.
    The answer must be in the kind's scope (`scopes[kind]`): a caller asking for user turns only
    keeps them."""
    questions: dict[str, dict[str, Any]] = {}
    for kind in {hit.kind for hit in hits}:
        spec = searchable.get(kind)
        if spec.answers is not None:
            rows = [hit.obj for hit in hits if hit.kind == kind and hit.obj is not None]
            scope = (scopes or {}).get(kind)
            questions[kind] = spec.answers(rows, scope.rows if scope is not None else None)
    placed: dict[tuple[str, str], Hit] = {}
    seen_text: set[str] = set()
    out: list[Hit] = []
    for hit in hits:
        echoes = searchable.get(hit.kind).echoes
        if echoes is not None and hit.obj is not None and echoes(hit.obj, query):
            continue
        asking = hit.key in questions.get(hit.kind, {})
        answer = questions[hit.kind][hit.key] if asking else None
        repeat = asking and repeats(searchable.get(hit.kind).text(hit.obj) or "", query)
        if answer is None:
            if repeat or (hit.kind, hit.key) in placed:
                continue
            text = _same_text_key(hit) if hit.obj is not None else ""
            if text and text in seen_text:
                continue
            seen_text.add(text)
            placed[(hit.kind, hit.key)] = hit
            out.append(hit)
            continue
        key = (hit.kind, str(answer.pk))
        merged = placed.get(key) or next((h for h in hits if (h.kind, h.key) == key), None)
        if merged is None:
            merged = Hit(kind=hit.kind, key=str(answer.pk), obj=answer)
        merged.fused = max(merged.fused, hit.fused * question_share(hit, query))
        merged.similarity = max((s for s in (merged.similarity, hit.similarity) if s is not None), default=None)
        if not repeat and merged.question is None:
            merged.question = hit.obj
        if key not in placed:
            placed[key] = merged
            seen_text.add(_same_text_key(merged))
            out.append(merged)
    out.sort(key=lambda hit: -hit.fused)
    return out


class ScoreDict(TypedDict):
    fused: float
    fts: float | None
    fts_rank: int | None
    vector_similarity: float | None
    vector_rank: int | None
    context: float


class QuestionDict(TypedDict):
    id: str
    label: str
    text: str
    turn: int | None


class RecallHitDict(TypedDict):
    kind: str
    id: str
    label: str
    text: str
    snippet: str
    created_at: str | None
    score: float
    scores: ScoreDict
    conversation_id: str | None
    turn: int | None
    superseded_by: str | None  # a superseded memory (include_superseded): the memory that replaced it
    # Files it names that changed since it was written (core.anchors): possibly stale; None: it holds.
    stale: list[anchors.MarkDict] | None
    question: QuestionDict | None  # the question this hit answers, folded into it (answers_first)


class CompactHitDict(TypedDict, total=False):
    """One hit as an index row (progressive disclosure, as claude-mem's search → get): which item,
    from when and where, one line of it (ending in "…" when cut), and what reading it whole costs
    (`tokens`); get_item (MCP winni_get) reads the rest, and names a message's conversation and
    turn for reading the turns around it. Empty fields are left out: every character of a page is
    read by the agent's model."""

    kind: str
    id: str
    date: str  # YYYY-MM-DD
    project: str  # its slug
    line: str
    tokens: int  # the full item's text, ≈ 4 characters a token
    superseded_by: str  # a superseded memory (include_superseded): the one that replaced it
    stale: list[anchors.MarkDict]  # files it names changed since it was written (core.anchors)


class RecallDict(TypedDict):
    query: str
    mode: str
    kinds: list[str]
    results: list[RecallHitDict]
    count: int
    degraded: bool
    time_filter: dict[str, Any] | None  # what the query's time words (and recency) did: core.timerank


class CompactRecallDict(TypedDict):
    """RecallDict with compact rows (detail="compact")."""

    query: str
    mode: str
    kinds: list[str]
    results: list[CompactHitDict]
    count: int
    degraded: bool
    time_filter: dict[str, Any] | None


def _validate(query: Any, kinds: Any, limit: Any, mode: Any) -> tuple[str, list[str], int, Mode]:
    query = validate_query(query)
    known = searchable.kinds()
    if kinds is None or kinds == []:
        kinds = known
    if not isinstance(kinds, list) or any(kind not in known for kind in kinds):
        bad = [kind for kind in kinds if kind not in known] if isinstance(kinds, list) else kinds
        raise InvalidInput(f"kinds: unknown kind {bad!r}; known kinds are {', '.join(known)}", field="kinds")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIMIT_MAX:
        raise InvalidInput(f"limit must be between 1 and {LIMIT_MAX}, got {limit!r}", field="limit")
    if not is_mode(mode):
        raise InvalidInput(f"mode must be one of {', '.join(MODES)}, got {mode!r}", field="mode")
    return query, list(dict.fromkeys(kinds)), limit, mode


def recall_scopes(kinds: list[str], filters: dict[str, Any], project_only: Any = False) -> dict[str, Scope]:
    """Per kind, the rows it may return under `filters`; kinds that cannot honour a filter drop out.
    `project` (a kind's registered lookup to its project) is a project's name: every kind scopes
    it by core.projects.search_scope (the project's rows, and the global memories and startup
    contexts unless `project_only`), and a name matching no project matches nothing."""
    start, end = parse_date_range(filters.get("start_date"), filters.get("end_date"))
    given = {name: value for name in searchable.filter_names()
             if (value := filters.get(name)) not in (None, "", [])}
    named = given.pop("project", None)
    scopes: dict[str, Scope] = {}
    for kind in kinds:
        spec = searchable.get(kind)
        project = projects.search_scope(named, model=spec.model, project_only=project_only)
        if any(name not in spec.filters for name in given) or (project.narrows and "project" not in spec.filters):
            continue
        if (start or end) and "created_at" not in {f.name for f in spec.model._meta.get_fields()}:
            continue
        lookups: dict[str, Any] = {spec.filters[name]: value for name, value in given.items()}
        if start:
            lookups["created_at__gte"] = start
        if end:
            lookups["created_at__lt"] = end
        scope = project.scope(spec.model._default_manager.all(), spec.filters.get("project", "project"))
        scopes[kind] = scope.filter(**lookups) if lookups else scope
    return scopes


def _hit_dict(hit: Hit) -> RecallHitDict:
    spec = searchable.get(hit.kind)
    obj = hit.obj
    text = spec.text(obj) or ""
    created = getattr(obj, "created_at", None)
    result: RecallHitDict = {
        "kind": hit.kind,
        "id": hit.key,
        "label": spec.label(obj),
        "text": text[:TEXT_CHARS],
        "snippet": shown if (shown := (spec.display(obj) if spec.display else None)
                             or searchable.passage_shown(hit.kind, obj, hit.passage)) else text[:SNIPPET_CHARS],
        "created_at": created.isoformat() if created else None,
        "score": round(hit.fused, 6),
        "scores": {
            "fused": round(hit.fused, 6),
            "fts": None if hit.fts_score is None else round(hit.fts_score, 4),
            "fts_rank": hit.fts_rank,
            "vector_similarity": None if hit.similarity is None else round(hit.similarity, 4),
            "vector_rank": hit.vector_rank,
            "context": round(hit.context, 6),
        },
        "conversation_id": None,
        "turn": None,
        "superseded_by": None,
        "stale": None,
        "question": None,
    }
    if spec.hit_fields is not None:
        result.update(spec.hit_fields(obj))  # type: ignore[typeddict-item]  # HitFields' keys are among these; a TypedDict may hold more, so mypy cannot tell
    if hit.question is not None:
        asked = hit.question
        result["question"] = {"id": str(asked.pk), "label": spec.label(asked),
                              "text": (spec.text(asked) or "")[:SNIPPET_CHARS],
                              "turn": (spec.hit_fields(asked) if spec.hit_fields else {}).get("turn")}
    return result


def _project_slugs(objects: list[Any]) -> dict[Any, str]:
    from core.models import Project

    ids = {project_id for obj in objects if (project_id := getattr(obj, "project_id", None)) is not None}
    return dict(Project.objects.filter(pk__in=ids).values_list("pk", "slug")) if ids else {}


def tokens_of(text: str) -> int:
    """What reading `text` costs a model, ≈ 4 characters a token (the measure docs/benchmarks.md uses)."""
    return -(-len(text) // 4)


def compact_rows(hits: list[Hit]) -> list[CompactHitDict]:
    slugs = _project_slugs([hit.obj for hit in hits])
    rows: list[CompactHitDict] = []
    for hit in hits:
        spec, obj = searchable.get(hit.kind), hit.obj
        text = spec.text(obj) or ""
        line = " ".join(((spec.display(obj) if spec.display else None) or text).split())
        created = getattr(obj, "created_at", None)
        # Empty fields are left out (in this order).
        row: CompactHitDict = {"kind": hit.kind, "id": hit.key}
        if created:
            row["date"] = created.date().isoformat()
        if (project := slugs.get(getattr(obj, "project_id", None))) is not None:
            row["project"] = project
        row["line"] = line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"
        row["tokens"] = tokens_of(text)
        if (superseded_by := (spec.hit_fields(obj) if spec.hit_fields else {}).get("superseded_by")) is not None:
            row["superseded_by"] = superseded_by
        rows.append(row)
    return rows


class ItemDict(TypedDict, total=False):
    """An item whole (its kind and id are the caller's); empty fields left out. A message names its
    conversation and turn (the turns around it: dewey_get_conversation)."""

    label: str
    text: str
    created_at: str
    project: str
    conversation_id: str
    turn: int
    superseded_by: str


def get_item(*, kind: Any, item_id: Any) -> ItemDict:
    """One searchable item whole (a recall row's `kind` and `id`), if the caller may read it:
    the same scope as recall's (a token limited to projects reads only theirs)."""
    known = searchable.kinds()
    if kind not in known:
        raise InvalidInput("kind: " + NOT_ONE_OF.format(choices=", ".join(known), got=shown_value(kind)), field="kind")
    scopes = recall_scopes([kind], {})
    # Its id, or its short name as automatic recall's block gives it (core.shortref).
    key = shortref.resolve(scopes[kind].rows, item_id, field="id", noun=kind) if kind in scopes \
        else parse_uuid(item_id, field="id")
    obj = scopes[kind].rows.filter(pk=key).first() if kind in scopes else None
    if obj is None:
        raise NotFound(f"id: no {kind} with id {str(key)!r}", field="id")
    spec = searchable.get(kind)
    text = spec.text(obj) or ""
    created = getattr(obj, "created_at", None)
    item: dict[str, Any] = {"label": spec.label(obj), "text": text, "created_at": created.isoformat() if created else None,
                            "project": _project_slugs([obj]).get(getattr(obj, "project_id", None))}
    if spec.hit_fields is not None:
        item.update(spec.hit_fields(obj))
    return cast(ItemDict, {key: value for key, value in item.items() if value is not None})  # its empty fields left out


def recall(
    *,
    query: str,
    kinds: list[str] | None = None,
    limit: int = LIMIT_DEFAULT,
    mode: str = "hybrid",
    filters: dict[str, Any] | None = None,
    include_superseded: Any = False,
    as_of: Any = None,
    recency: Any = None,
    project_only: Any = False,
    detail: Any = "full",
) -> RecallDict | CompactRecallDict:
    """`filters["project"]`: that project's rows, with the memories and startup contexts of no
    project unless `project_only` (core.projects.search_scope). `include_superseded`: also rows
    that no longer hold (superseded memories, medallions that are not active); each such memory hit names its successor (`superseded_by`). The query's time
    words, read relative to `as_of` (default now), and `recency` (a half-life in days) reweigh and
    list the hits as core.timerank says; `time_filter` in the result tells what they did. A question
    about the asker's own doings weighs the user's turns more (asks_about_self, SELF_BOOST).
    `detail`: "full" hits (text, snippet, scores) or "compact" index rows (compact_rows). A hit
    naming a file that changed since it was written is possibly stale (core.anchors): its `stale`
    says what changed and when, and it comes after the hits that hold."""
    query, kinds, limit, mode = _validate(query, kinds, limit, mode)
    if detail not in DETAILS:
        raise InvalidInput("detail: " + NOT_ONE_OF.format(choices=" or ".join(map(repr, DETAILS)),
                                                          got=shown_value(detail)), field="detail")
    if not isinstance(include_superseded, bool):
        raise InvalidInput("include_superseded must be true or false", field="include_superseded")
    time = timerank.plan(query, as_of=as_of, recency=recency)
    scopes = recall_scopes(kinds, filters or {}, project_only)
    degraded = False

    def ranked(text: str, depth: int) -> list[Hit]:
        nonlocal degraded
        if not degraded:
            try:
                return rank(query=text, scopes=scopes, limit=depth, mode=mode,
                            include_superseded=include_superseded)
            except EmbeddingUnavailable:
                # semantic needs the provider; say so and answer lexically rather than not at all.
                degraded = True
        return rank(query=text, scopes=scopes, limit=depth, mode="fts",
                    include_superseded=include_superseded)

    def created(hit: Hit) -> Any:
        return getattr(hit.obj, "created_at", None)

    with storage_op("recall", mode=mode, kinds=",".join(kinds), limit=limit) as log:
        boost_self = asks_about_self(query)

        def score(hit: Hit) -> float:
            said = boost_self and hit.kind == "message" and getattr(hit.obj, "role", None) == "user"
            return hit.fused * (1 + SELF_BOOST) if said else hit.fused

        deeper = time.boosts or boost_self
        depth = min(limit * timerank.DEPTH_FACTOR, LIMIT_MAX * timerank.DEPTH_FACTOR) if deeper else limit
        # A question and its answer become one hit: ask for more so the page stays full.
        hits = answers_first(ranked(query, depth * ROUND_DEPTH_FACTOR), query=query, scopes=scopes)
        if boost_self:
            hits = sorted(hits, key=lambda hit: -score(hit))
        hits = timerank.reweigh(hits, time, score=score, created=created)[:limit]
        # A hit about a file that changed since ranks below every hit that still holds.
        stale = anchors.marks_as_dicts(f"{hit.kind}:{hit.key}" for hit in hits)
        hits = anchors.holding_first(hits, lambda hit: f"{hit.kind}:{hit.key}", stale)
        log.update(results=len(hits), stale=len(stale))
    timeline = timerank.timeline(hits, created, lambda hit: hit.key) if time.order else None
    time_filter = time.report(timeline)
    if detail == "compact":
        rows = compact_rows(hits)
        for row in rows:
            if (marks := stale.get(f"{row['kind']}:{row['id']}")) is not None:
                row["stale"] = marks
        return {"query": query, "mode": mode, "kinds": kinds, "results": rows, "count": len(hits),
                "degraded": degraded, "time_filter": time_filter}
    results = [_hit_dict(hit) for hit in hits]
    for result in results:
        result["stale"] = stale.get(f"{result['kind']}:{result['id']}")
    return {"query": query, "mode": mode, "kinds": kinds, "results": results, "count": len(hits),
            "degraded": degraded, "time_filter": time_filter}
