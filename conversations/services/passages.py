"""A long chat turn's passages: what the embedding model reads of it beyond the message's own vector.

all-MiniLM-L6-v2 reads about 128 word pieces well (it was trained on pairs of that length) and
ignores everything past 256; a 1,000-character reply under one vector sits 0.1-0.4 cosine from a
short question about one of its sentences. So a user, assistant or system turn longer than
PASSAGE_CHARS gets, beside its own vector (unchanged: what it is as a whole, with the turn before
it), the vectors of its sentence-aligned passages of at most PASSAGE_CHARS characters each
(memory.vectors stores them as passages 1..n of the message); search ranks a message by its best
vector and shows the passage that matched.

Bounded: at most WINNI_EMBEDDING_PASSAGES_MAX passages (default 8, never more than 16), from the
start of the text; a 1 MB message costs what a 8 × PASSAGE_CHARS one does, and the rest of it is found by full-text search, which
reads all of it. Tool messages get none: what the model reads of them is already a short head
(search.message_embedding_text) and their long outputs are code and logs, found by their words.

A passage keeps its message's role and date (it is a vector of that message: the role and date
filters apply to it, and a hit on it shows them); its text is the message's words alone, as the
message's own vector's is."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from django.conf import settings

from core.searchable import Passage

if TYPE_CHECKING:
    from conversations.models import Message

# ≈ 128 word pieces of English prose (all-MiniLM-L6-v2's tokenizer, LongMemEval_S dev turns over
# 550 characters: 4.45 characters per word piece, passages of median 128 pieces, 90th percentile
# 134; code and paths take more pieces per character, and past 256 the model cuts them short).
PASSAGE_CHARS = 550
# Passages per message at most (besides its own vector): WINNI_EMBEDDING_PASSAGES_MAX, default 8.
# 8 × 550 characters covers every turn of 4,400 characters or less whole: 99.7 % of LongMemEval_S
# dev's turns (its longest: 17,000) and ≈ 97 % of the realistic coding corpus' user and assistant
# turns; past that, a turn pasted or dumped into the chat (a log, a file) is found by its words.
# The hard cap bounds what a 1 MB message costs whatever the setting says.
PASSAGES_MAX = 16
PASSAGE_ROLES = ("user", "assistant", "system")

# Where a sentence ends: after . ! ? followed by space, or at a line break (lists, paragraphs).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
_SPACE = re.compile(r"\s")


def message_passages(message: Message) -> list[Passage]:
    """The passages of `message` (role, content) beyond its own vector: none for a short or a tool
    message, at most WINNI_EMBEDDING_PASSAGES_MAX."""
    most = min(settings.WINNI_EMBEDDING_PASSAGES_MAX, PASSAGES_MAX)
    if most <= 0 or message.role not in PASSAGE_ROLES or len(message.content) <= PASSAGE_CHARS:
        return []
    return [Passage(text=shown, shown=shown) for shown in passages_of(message.content, most=most)]


def passages_of(text: str, *, most: int = PASSAGES_MAX) -> list[str]:
    """`text` cut into pieces of at most PASSAGE_CHARS characters at sentence ends (a sentence
    longer than that at a space), whole sentences packed together, at most `most` of them from
    the start. Reads only as much of the text as they can hold."""
    most = min(most, PASSAGES_MAX)
    text = text[: 2 * most * PASSAGE_CHARS]
    out: list[str] = []
    start = end = 0  # the passage being packed: text[start:end]
    for begin, stop in _pieces(text):
        if end > start and stop - start > PASSAGE_CHARS:
            out.append(text[start:end])
            if len(out) == most:
                return out
            start = begin
        elif end == start:
            start = begin
        end = stop
    if end > start and len(out) < most:
        out.append(text[start:end])
    return out


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each sentence of `text`, a sentence longer than PASSAGE_CHARS cut at its
    last space before each PASSAGE_CHARS (or at PASSAGE_CHARS when it has none)."""
    at = 0
    for found in [*SENTENCE_END.finditer(text), None]:
        stop = found.start() if found is not None else len(text)
        while stop - at > PASSAGE_CHARS:
            cut = max((m.start() for m in _SPACE.finditer(text, at + 1, at + PASSAGE_CHARS)), default=at + PASSAGE_CHARS)
            yield at, cut
            at = cut + 1 if text[cut].isspace() else cut
        if stop > at:
            yield at, stop
        if found is not None:
            at = found.end()
