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
