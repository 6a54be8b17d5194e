"""A reusable synthetic conversation corpus, loaded with COPY into the database Django is configured
for (other benchmarks import it), and the COPY path any corpus loads through (copy_corpus: a
stream of ConversationRow; bench/realistic.py's coding-agent sessions use it too).

    from bench.corpus import setup_django, load_corpus
    setup_django()                      # honours DATABASE_URL / WINNI_DATA_DIR, runs migrations
    stats = load_corpus(conversations=10_000, messages=100_000)

Run alone: `.venv/bin/python bench/corpus.py --conversations 1000 --messages 10000`.

The text: a Zipf-distributed mix of ~400 real technical words and 20,000 generated ones (so the
vocabulary is varied and most terms are rare), 5–80 words per message. Three marker terms have
known frequencies so benchmarks can ask for rare, medium and very common terms:
COMMON_TERM is in 90% of messages, MEDIUM_TERM in 1%, RARE_TERM in 0.002%.

Conversation sizes follow a long-tailed (log-normal) distribution with mean messages/conversations,
clipped to [min_per, max_per] (default 2–200): with 100K/1M the mean is 10, so most conversations
are short and a few reach 200. Timestamps spread over the last 365 days; turn numbers 1..n;
updated_at is the last message's time.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
COMMON_TERM = "update"
MEDIUM_TERM = "kubernetes"
RARE_TERM = "zanzibar"
COMMON_SHARE, MEDIUM_SHARE, RARE_SHARE = 0.90, 0.01, 0.00002
ROLES = ["user", "assistant", "system", "tool"]
ROLE_WEIGHTS = [0.45, 0.45, 0.03, 0.07]

REAL_WORDS = """
the a to of and in is it for on that this with you be as are was can we not have will from at or
by an if but do use so get all my your one how what when which there about would make like time
just know take people into year good some could them see other than then now look only come its
over think also back after work first well way even new want because any these give day most us
function class method variable database query index table column row server client request
response error exception stack trace debug log config setting environment deploy build test
commit branch merge rebase pull push release version package module import export library
framework python django postgres redis celery docker compose container image volume network port
socket thread process memory cache latency throughput benchmark profile optimize refactor rename
delete create insert select join filter order group limit offset cursor transaction lock
deadlock retry timeout queue worker task schedule cron job event signal hook handler callback
async await future promise stream buffer file path directory permission user token secret auth
login session cookie header body json yaml xml html css javascript typescript react component
state props render route url api endpoint rest graphql schema migration model field constraint
unique foreign key primary null default value type string integer float boolean list dict tuple
set array map reduce sort search vector embedding similarity cosine distance rank score result
prompt model agent tool call message conversation context summary answer question issue bug fix
feature review approve reject comment plan design spec requirement estimate deadline meeting
note idea problem solution tradeoff decision risk mitigation rollback backup restore vacuum
analyze explain plan cost rows width loop nested hash sequential scan bitmap heap gin gist btree
latency p95 p99 median mean histogram metric alert dashboard chart graph trace span sample
linux kernel shell bash script terminal command flag option argument parameter return yield
generator iterator closure decorator lambda recursion algorithm complexity pointer reference
copy clone move borrow ownership lifetime trait interface abstract concrete inherit override
""".split()


@dataclass
class LoadStats:
    conversations: int
    messages: int
    seconds: float
    index_seconds: float
    characters: int = 0

    @property
    def rows_per_second(self) -> float:
        return (self.conversations + self.messages) / self.seconds if self.seconds else 0.0


def setup_django(*, migrate: bool = True) -> None:
    """Configure Django from the environment (DATABASE_URL or the embedded server in
    WINNI_DATA_DIR) and bring the schema up to date."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def _vocabulary(rng: np.random.Generator, size: int = 20_000) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["qu", "th", "sh", "ch", "str"]
    markers = {COMMON_TERM, MEDIUM_TERM, RARE_TERM}
    words: list[str] = [w for w in dict.fromkeys(REAL_WORDS) if w not in markers]
    seen = set(words) | markers
    while len(words) < size:
        word = "".join(rng.choice(syllables, size=int(rng.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def conversation_sizes(rng: np.random.Generator, conversations: int, messages: int, lo: int, hi: int) -> np.ndarray:
    """Long-tailed sizes in [lo, hi] summing exactly to `messages`."""
    if not lo * conversations <= messages <= hi * conversations:
        raise ValueError(f"{messages} messages cannot fill {conversations} conversations of {lo}-{hi} messages")
    mean = messages / conversations
    sizes = np.clip(rng.lognormal(np.log(mean) - 0.5, 1.0, conversations), lo, hi).round().astype(np.int64)
    diff = messages - int(sizes.sum())
    # Spread the rounding/clipping difference one message at a time over conversations with room.
    while diff:
        step = 1 if diff > 0 else -1
        room = np.flatnonzero(sizes < hi) if step > 0 else np.flatnonzero(sizes > lo)
        pick = rng.choice(room, size=min(abs(diff), len(room)), replace=False)
        sizes[pick] += step
        diff -= step * len(pick)
    return sizes


class _TextMaker:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.words = np.array(_vocabulary(rng), dtype=object)
        ranks = np.arange(1, len(self.words) + 1)
        weights = 1.0 / ranks**1.05
        self.cdf = np.cumsum(weights / weights.sum())

    def texts(self, n: int) -> list[str]:
        rng = self.rng
        lengths = rng.integers(5, 81, n)
        picks = np.searchsorted(self.cdf, rng.random(int(lengths.sum())))
        picks = np.minimum(picks, len(self.words) - 1)
        tokens = self.words[picks]
        common = rng.random(n) < COMMON_SHARE
        medium = rng.random(n) < MEDIUM_SHARE
        rare = rng.random(n) < RARE_SHARE
        out = []
        start = 0
        for i in range(n):
            end = start + int(lengths[i])
            parts = list(tokens[start:end])
            start = end
            if common[i]:
                parts.insert(len(parts) // 2, COMMON_TERM)
            if medium[i]:
                parts.append(MEDIUM_TERM)
            if rare[i]:
                parts.insert(0, RARE_TERM)
            out.append(" ".join(parts).capitalize() + ".")
        return out


def _copy_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _copy_value(value: Any) -> str:
    """One field in COPY's text format: NULL, JSON for dicts, ISO for timestamps."""
    if value is None:
        return "\\N"
    if isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, dt.datetime):
        value = value.isoformat()
    return _copy_escape(str(value))


@dataclass(slots=True)
class MessageRow:
    id: uuid.UUID
    turn_number: int
    role: str
    content: str
    created_at: dt.datetime
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class ConversationRow:
    id: uuid.UUID
    session_id: str | None
    metadata: dict[str, Any] | None
    created_at: dt.datetime
    updated_at: dt.datetime
    messages: list[MessageRow]


# Secondary message indexes that are cheaper to build once after a bulk load than to maintain.
_DEFERRABLE_INDEXES = ("msg_search_vector", "msg_created")
# A COPY batch ends after this many conversations or characters of message text, whichever comes
# first (a batch of long realistic messages stays a few tens of MB).
_BATCH_CONVERSATIONS = 2_000
_BATCH_CHARS = 32_000_000


def copy_corpus(
    conversations: Iterable[ConversationRow],
    *,
    messages: int,
    defer_indexes: bool | None = None,
    progress: bool = True,
    on_batch: Callable[[list[uuid.UUID]], None] | None = None,
    projects: Mapping[str, int] | None = None,
) -> LoadStats:
    """COPY conversations and their messages (any generator of ConversationRow: this module's
    synthetic text, bench/realistic.py's coding-agent sessions) into the configured database,
    in batches; `messages` is the expected total, for the progress bar. `on_batch` gets each
    batch's message ids once they are in (bench/memory.py adds their vectors). `projects` maps a
    conversation's metadata["project"] to the project id it is written with (its messages take it
    from the database's trigger, as captured ones do).

    defer_indexes (default: when the message table is empty) drops the GIN and created_at indexes
    first and rebuilds them after the load, which is several times faster than maintaining them."""
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT NOT EXISTS (SELECT 1 FROM conversations_message)")
        empty = cursor.fetchone()[0]
        defer = empty if defer_indexes is None else defer_indexes
        if defer:
            for name in _DEFERRABLE_INDEXES:
                cursor.execute(f"DROP INDEX IF EXISTS {name}")
    bar = tqdm(total=messages, unit="msg", desc="COPY messages", disable=not progress, smoothing=0.1)
    counts = [0, 0, 0]  # conversations, messages, characters

    def flush(conv_rows: list[str], msg_rows: list[str], ids: list[uuid.UUID]) -> None:
        with connection.cursor() as cursor:
            with cursor.copy(
                "COPY conversations_conversation (id, session_id, metadata, created_at, updated_at, title, "
                "first_message_at, last_message_at, project_id) FROM STDIN"
            ) as copy:
                copy.write("".join(conv_rows))
            with cursor.copy(
                "COPY conversations_message (id, conversation_id, turn_number, role, content, metadata, created_at) "
                "FROM STDIN"
            ) as copy:
                copy.write("".join(msg_rows))
        if on_batch is not None:
            on_batch(ids)
        bar.update(len(ids))

    conv_rows: list[str] = []
    msg_rows: list[str] = []
    ids: list[uuid.UUID] = []
    chars = 0
    from conversations.models import prompt_title

    for conversation in conversations:
        cid = conversation.id
        # What the message services keep on the conversation: its first prompt and message times.
        times = [message.created_at for message in conversation.messages]
        prompt = next((message.content for message in conversation.messages if message.role == "user"), None)
        conv_rows.append("\t".join(_copy_value(v) for v in (
            cid, conversation.session_id, conversation.metadata, conversation.created_at,
            conversation.updated_at, None if prompt is None else prompt_title(prompt),
            min(times, default=None), max(times, default=None),
            (projects or {}).get(conversation.metadata.get("project")))) + "\n")
        for message in conversation.messages:
            msg_rows.append("\t".join(_copy_value(v) for v in (
                message.id, cid, message.turn_number, message.role, message.content, message.metadata,
                message.created_at)) + "\n")
            ids.append(message.id)
            chars += len(message.content)
        counts[0] += 1
        if len(conv_rows) >= _BATCH_CONVERSATIONS or chars >= _BATCH_CHARS:
            counts[1] += len(ids)
            counts[2] += chars
            flush(conv_rows, msg_rows, ids)
            conv_rows, msg_rows, ids, chars = [], [], [], 0
    if conv_rows:
        counts[1] += len(ids)
        counts[2] += chars
        flush(conv_rows, msg_rows, ids)
    bar.close()
    loaded = time.perf_counter() - started
    index_started = time.perf_counter()
    if defer:
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            if progress:
                print("building indexes (GIN on search_vector, created_at) ...", flush=True)
            cursor.execute("CREATE INDEX IF NOT EXISTS msg_created ON conversations_message (created_at DESC)")
            cursor.execute("CREATE INDEX IF NOT EXISTS msg_search_vector ON conversations_message USING gin (search_vector)")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_conversation")
        cursor.execute("ANALYZE conversations_message")
    index_seconds = time.perf_counter() - index_started
    stats = LoadStats(counts[0], counts[1], loaded + index_seconds, index_seconds, counts[2])
    if progress:
        print(
            f"loaded {stats.conversations:,} conversations / {stats.messages:,} messages "
            f"({stats.characters / 1e6:,.1f} M characters) in {stats.seconds:.1f} s "
            f"({stats.messages / loaded:,.0f} messages/s COPY incl. tsvector; indexes {index_seconds:.1f} s; "
            f"{stats.rows_per_second:,.0f} rows/s overall)",
            flush=True,
        )
    return stats


def synthetic_conversations(
    *,
    conversations: int,
    messages: int,
    seed: int = 0,
    min_per: int = 2,
    max_per: int = 200,
    session_share: float = 0.5,
    days: int = 365,
) -> Iterator[ConversationRow]:
    """The synthetic corpus, conversation by conversation (see the module docstring)."""
    rng = np.random.default_rng(seed)
    sizes = conversation_sizes(rng, conversations, messages, min_per, max_per)
    maker = _TextMaker(rng)
    now = dt.datetime.now(dt.timezone.utc)
    for first in range(0, conversations, _BATCH_CONVERSATIONS):
        batch_sizes = sizes[first : first + _BATCH_CONVERSATIONS]
        n_messages = int(batch_sizes.sum())
        texts = maker.texts(n_messages)
        roles = rng.choice(len(ROLES), size=n_messages, p=ROLE_WEIGHTS)
        gaps = rng.integers(5, 600, n_messages)
        k = 0
        for j, size in enumerate(batch_sizes):
            started_at = now - dt.timedelta(seconds=float(rng.uniform(0, days * 86400)))
            session = f"bench-session-{(first + j) // 5}" if rng.random() < session_share else None
            when = started_at
            rows = []
            for turn in range(1, int(size) + 1):
                when = when + dt.timedelta(seconds=int(gaps[k]))
                role = ROLES[roles[k]] if turn > 1 else "user"
                rows.append(MessageRow(uuid.uuid4(), turn, role, texts[k], when))
                k += 1
            yield ConversationRow(uuid.uuid4(), session, {"source": "bench"}, started_at, when, rows)


def load_corpus(*, conversations: int, messages: int, defer_indexes: bool | None = None, progress: bool = True,
                **shape: Any) -> LoadStats:
    """COPY `conversations` synthetic conversations holding `messages` messages into the configured
    database (copy_corpus); `shape` is synthetic_conversations' seed, min_per, max_per,
    session_share (about that share of the conversations get a session id, `bench-session-<n>`,
    ~5 conversations per session) and days."""
    rows = synthetic_conversations(conversations=conversations, messages=messages, **shape)
    return copy_corpus(rows, messages=messages, defer_indexes=defer_indexes, progress=progress)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    setup_django()
    load_corpus(conversations=args.conversations, messages=args.messages, seed=args.seed)


if __name__ == "__main__":
    main()
