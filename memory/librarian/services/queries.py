"""What the answer cache does with the text of a query: the normalised form and its hash (L1),
the canonical form L2 embeds, and the negation/number guard on semantic hits."""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass

from memory import embeddings

_SPACE = re.compile(r"\s+")
# Sentence punctuation at the end does not change the question: "how do we store money amounts?"
# is "how do we store money amounts". Only these marks (ASCII and full-width), so "what is c#?"
# stays "what is c#" and "c++" keeps its pluses. The migration librarian 0003 rehashed the
# entries stored before with this rule (a copy of it: change both together).
_TRAILING_PUNCTUATION = re.compile(r"[\s.?!…;:,？！。，；：]+$")


def normalize_query(query: str) -> str:
    """Lowercase, trimmed, whitespace collapsed (seed §4.2), trailing sentence punctuation removed
    (unless that is all there is: "?" stays "?")."""
    spaced = _SPACE.sub(" ", query.strip().lower())
    return _TRAILING_PUNCTUATION.sub("", spaced) or spaced


def query_hash(query: str) -> str:
    return hashlib.sha256(normalize_query(query).encode("utf-8")).hexdigest()


# The canonical form is what L2 embeds, on both sides (the lookup and the cached question's
# vector): the question without the wording that does not change what is asked — case,
# punctuation, contractions, politeness ("please", "could you tell me") and interrogative
# scaffolding ("how can I" / "how to" → "how do i", "which" → "what"). Negation words and numbers
# are kept: the guard reads them from the original text anyway. Measured on the hand-written pairs
# (bench/cache.py) this is worth a few points of paraphrase recall at 0.15 and fewer hits between
# opposites ("enable" / "disable"); most of the distance between paraphrases is in their content
# words, which it leaves alone on purpose (no synonym lists: those would be fitted to the pairs).
# Change QUERY_FORM with the rules: vectors made under another form are then refreshed.
QUERY_FORM = "canonical-1"
_QUOTE = re.compile(r"[’‘`´]")
_EXPANSIONS = [(re.compile(pattern), replacement) for pattern, replacement in (
    (r"\bwon't\b", "will not"), (r"\bcan't\b", "can not"), (r"\bcannot\b", "can not"), (r"\bshan't\b", "shall not"),
    (r"n't\b", " not"), (r"\b(what|where|who|how|when|why|which|that|there|it|here)'s\b", r"\1 is"),
    (r"'re\b", " are"), (r"'ve\b", " have"), (r"'ll\b", " will"), (r"'d\b", " would"), (r"\bi'm\b", "i am"),
    (r"'s\b", ""),  # what is left is a possessive: "the shop's dashboards" → "the shop dashboards"
)]
# Words, keeping the dots, dashes, slashes and colons inside them: 3.11, 2026-11-21, a/b, 10:30.
_WORD = re.compile(r"\w+(?:[./:-]\w+)*")
# Openings that only ask politely; removed repeatedly ("hey, could you tell me …"). One regular
# expression, longest alternatives first: an L2 lookup pays microseconds for the whole form.
_POLITE_OPENINGS = re.compile(r"^(?:(?:%s) )+" % "|".join(sorted((
    "hey", "hi", "hello", "ok", "okay", "so", "quick question", "question", "please", "kindly",
    "could you please", "can you please", "would you please", "could you tell me", "can you tell me",
    "would you tell me", "tell me", "could you explain", "can you explain", "please explain", "explain",
    "can you show me", "could you show me", "show me", "do you know", "does anyone know", "i want to know",
    "i would like to know", "i wonder", "i was wondering", "any idea",
), key=len, reverse=True)))
_FILLER = frozenset({"please", "kindly", "exactly", "actually", "basically"})
_SCAFFOLDING = [(re.compile(pattern), replacement) for pattern, replacement in (
    (r"^how (can|could|should|would|do|does|might|may) (i|we|you|one) ", "how do i "),
    (r"^how (i|we|you|one) (can|could|should|would|might|may) ", "how do i "),  # "tell me how I can …"
    (r"^how to ", "how do i "),
    (r"^what (is|are) the (way|ways|procedure|process|steps) to ", "how do i "),
    (r"^(is it possible|is there a way) (for me |for us )?to ", "can i "),
    (r"^(can|could|may) (we|you|one) ", "can i "),
    (r"^which ", "what "),
)]


def canonical_query(query: str) -> str:
    """The form of a query that L2 embeds (see above); never empty for a non-empty query."""
    text = _QUOTE.sub("'", normalize_query(query))
    for pattern, replacement in _EXPANSIONS:
        text = pattern.sub(replacement, text)
    words = _WORD.findall(text)
    canonical = _POLITE_OPENINGS.sub("", " ".join(words))
    canonical = " ".join(word for word in canonical.split() if word not in _FILLER)
    for pattern, replacement in _SCAFFOLDING:
        canonical = pattern.sub(replacement, canonical)
    return canonical or " ".join(words) or normalize_query(query)


def query_vector_tag() -> str:
    """What `QueryMemory.embedding_model` holds for a current vector: the model and the form."""
    return f"{embeddings.model_name()}+{QUERY_FORM}"


def embed_queries(queries: list[str]) -> list[list[float]]:
    """The L2 vectors of queries: their canonical forms, embedded. Slow (a model call): outside
    transactions."""
    return embeddings.embed_in_request([canonical_query(query) for query in queries])


# A question and its negation, or the same question about another number, often sit within
# cosine distance 0.15 of each other ("how do I enable X" / "how do I not enable X", "python 3.11"
# / "python 3.12"). The guard refuses a semantic hit when the two queries differ in either.
NEGATION_WORDS = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor", "without"}
)
# "one" is left out on purpose: it is far more often a pronoun ("which one") than a count.
NUMBER_WORDS = {
    "zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13",
    "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18",
    "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100",
    "thousand": "1000", "million": "1000000", "once": "1", "twice": "2",
}
_CONTRACTION = re.compile(r"n['’]t\b")
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[a-z]+")


@dataclass(frozen=True)
class QuerySignature:
    negations: tuple[str, ...]
    numbers: tuple[str, ...]


def query_signature(query: str) -> QuerySignature:
    """The negation words (n't and cannot read as "not") and the numbers of a query."""
    text = _CONTRACTION.sub(" not", normalize_query(query)).replace("cannot", "can not")
    negations: Counter[str] = Counter()
    numbers: set[str] = set()
    for token in _TOKEN.findall(text):
        if token[0].isdigit():
            numbers.add(re.sub(r"(?<=\d),(?=\d{3}\b)", "", token))
        elif token in NEGATION_WORDS:
            negations[token] += 1
        elif token in NUMBER_WORDS:
            numbers.add(NUMBER_WORDS[token])
    return QuerySignature(negations=tuple(sorted(negations.elements())), numbers=tuple(sorted(numbers)))


def semantic_guard_allows(query: str, cached_query: str) -> bool:
    """True when a semantic hit may be served: both queries carry the same negation words and the
    same numbers."""
    return query_signature(query) == query_signature(cached_query)
