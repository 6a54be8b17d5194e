"""Whether a text says again what another already says: nearly all its words are in the other's.
One rule for automatic recall's block (a decision, the turn that stated it, the reply that echoed
it and the memory that keeps it were given four times over) and for the offline medallion writer
(an assistant's "Understood: we decided …" is not a decision of its own)."""
from __future__ import annotations

import re
from typing import Iterable

# A text whose words are at least this share inside another's says the same thing. Texts of fewer
# words than MIN_WORDS never repeat (too little to tell).
SHARE = 0.8
MIN_WORDS = 6
_WORD = re.compile(r"[^\W_]{3,}")


def words(text: str) -> set[str]:
    """The words of `text` that count (three letters or more, case folded)."""
    return set(_WORD.findall(text.lower()))


def repeats(said: set[str], given: Iterable[set[str]]) -> bool:
    """Whether a text of words `said` says what one of the texts of words `given` already says."""
    return len(said) >= MIN_WORDS and any(len(said & other) >= SHARE * len(said) for other in given)


def unique(items: Iterable[str], limit: int, *, restated: bool = False) -> list[str]:
    """The first `limit` items, each once (the same words in the same order, case and punctuation
    aside); with `restated`, an item that says again what one kept says is left out too (an
    assistant's "Understood: we decided …" after the user's "We decided …"). Not for commands and
    paths, whose few words differ where it matters."""
    kept: list[set[str]] = []
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key, said = " ".join(re.findall(r"\w+", item.lower())), words(item)
        if item and key and key not in seen and not (restated and repeats(said, kept)):
            seen.add(key)
            kept.append(said)
            out.append(item)
            if len(out) >= limit:
                break
    return out
