"""What a text states as a decision or a rule, read without a model: the one reading that the
offline medallion writer (medallions/extractive.py) and the session digest
(conversations/services/digest.py) share, so that neither says "Decision: Decided: …" or takes a
passing "we will use" for the decision when the session labelled its decisions."""
from __future__ import annotations

import re

# "decision:" ends in a colon: a \b after it would need a word character next, so it stands apart.
DECISION = re.compile(
    r"\b(?:(?:decided|decide to|agreed|we chose|i chose|chose to|going with|settled on|we will use|"
    r"we'll use|will use|switch(?:ed)? to|opted for|let's use|use .+ instead of)\b|decision:)", re.I)
STRONG_DECISION = re.compile(r"\b(?:(?:decided|agreed|settled on)\b|decision:)", re.I)
# An explicit label ("Decision: …", "Decided: …"): the statement is what follows it.
DECISION_LABEL = re.compile(r"(?:^|\b)(?:\*\*)?(?:decision|decided)(?:\*\*)?\s*:\s*(?:\*\*)?", re.I)
INVARIANT = re.compile(r"\b(must (?:always|never|not|be)|always|never|invariant|do not|don't ever)\b", re.I)
# An explicit label ("Rule: round half-even", "Convention: …"): a rule, whatever its words; shown
# without the label by whoever lists it under its own ("Rules: …").
RULE_LABEL = re.compile(r"^\W*(?:\*\*)?(?:rule|convention)s?(?:\*\*)?\s*:\s*(?:\*\*)?", re.I)


SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str, limit: int) -> list[str]:
    """The sentences (or lines) of the first `limit` characters of `text`."""
    return [s.strip() for s in SENTENCE_END.split(text[:limit]) if s and s.strip()]


def states_a_rule(text: str, limit: int = 4_000) -> bool:
    """Whether `text` (its first `limit` characters) states a rule or a decision: what answers
    "how do I run the tests here?" for this project, where a turn that only did it does not."""
    said = sentences(text, limit)
    return bool(stated_rules(said) or stated_decisions(said))


def decision_statement(text: str) -> str:
    """A decision without its label ("Decision: use X" → "Use X"), so that whoever shows it under
    its own label ("Decision: …") does not say it twice; text before the label is left out too."""
    label = DECISION_LABEL.search(text)
    if label is None:
        return text.strip()
    rest = text[label.end():].strip()
    return rest[:1].upper() + rest[1:] if rest else text.strip()


def stated_decisions(sentences: list[str]) -> list[str]:
    """The sentences that state a decision, as they were written (not questions). Where the text
    labels its decisions ("Decision: …"), the labelled sentences are the decisions, not every
    sentence that says "use" or "going with"."""
    stated = [s for s in sentences if DECISION.search(s) and not s.rstrip().endswith("?")]
    labelled = [s for s in stated if DECISION_LABEL.search(s)]
    return labelled or stated


def stated_rules(sentences: list[str]) -> list[str]:
    """The sentences that state a rule ("must never", "always", "do not", or labelled "Rule: …"),
    decisions aside; a label is left out ("Rule: round half-even" → "Round half-even")."""
    found = []
    for sentence in sentences:
        label = RULE_LABEL.match(sentence)
        if (label or INVARIANT.search(sentence)) and not sentence.rstrip().endswith("?") \
                and not DECISION.search(sentence):
            rest = sentence[label.end():].strip() if label else sentence
            found.append(rest[:1].upper() + rest[1:] if label else rest)
    return [rule for rule in found if rule]
