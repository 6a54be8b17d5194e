"""Rounds: a user turn that asks something and the turns that answer it, one unit for ranking.

Search finds the question as easily as the answer (they share the words), and a question ranked
above its answer wastes the reader's first look. core.recall.answers_first applies the rule for
every interface; this module says, for messages, which turn asks and which turn answers it
(registered as the message kind's `answers`)."""
from __future__ import annotations

import re
from typing import Any

from django.db.models import Q, QuerySet

from conversations.models import Message
from conversations.services.passages import SENTENCE_END
from conversations.toolcalls import tool_call
from core.recall import repeats

# The answer is looked for among this many turns after the question (a round of an agent's tool
# calls is longer than a chat's reply, but a question answered 40 turns later is a new subject).
ROUND_REACH = 40
# A user turn asks when a question mark stands in its first lines or it opens like a question
# ("how do we store money"). A turn that only states ("For the record: …", "I finished the book",
# "Decision: integer cents.") is evidence itself and is never folded into the reply. (Asking only
# when the first sentence is a question kept more of the realistic corpus' statements, and lost
# more LoCoMo evidence among the first items: docs/benchmarks.md, "Answers before questions".)
_ASKS = re.compile(
    r"^\W*(?:what|how|why|which|when|where|who|whom|whose|can|could|should|would|will|shall|may|do|does|did|"
    r"is|are|was|were|have|has)\b", re.I)
QUESTION_SCAN_CHARS = 300


def asks(text: str) -> bool:
    """The turn asks something (see above)."""
    head = text.strip()[:QUESTION_SCAN_CHARS]
    return "?" in head or bool(_ASKS.match(head))


_WORD = re.compile(r"[\w'-]+")
# Words that say how a sentence asks or joins, not what it is about.
_FUNCTION_WORDS = frozenset(
    "a an the and or but if of to in on at by for from with about into over as is are was were be been "
    "am do does did done have has had can could should would will shall may might must what when where "
    "which who whom whose why how i me my we us our you your he she it its they them their this that "
    "these those there here not no so any some all".split())


def _topic_words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if word not in _FUNCTION_WORDS}


def message_states(message: Message, query: str) -> float:
    """The share of what `query` found in a user turn that the turn states rather than asks: of the
    query's words the turn holds, those only in its sentences that do not end in a question mark.
    "I got the JR pass last week. What should I see in Kyoto?" found by "when did I buy the JR
    pass" states the evidence (LongMemEval_S's users tell their facts so); "The deploy failed
    again. Which port does staging use?" found by "what did we decide about the staging port" only
    asks. A turn that asks only by how it opens ("how do we store money") states nothing."""
    stating: set[str] = set()
    asking: set[str] = set()
    for sentence in SENTENCE_END.split((message.content or "").strip()):
        (asking if sentence.endswith("?") else stating).update(_topic_words(sentence))
    if not asking:
        return 0.0
    found = _topic_words(query) & (stating | asking)
    return len(found - asking) / len(found) if found else 0.0


# The arguments in which an agent asks (a search's, a memory recall's): a tool call whose query asks
# (an MCP `dewey_search` or `winni_recall` of "How many times does the job retry?") echoes a
# question. Its words are the question's, so it matched them, and it was ranked above the turn
# stating the answer; what it found is stored and ranks on its own. A query that only names
# things ("httpx ConnectError fix") asks nothing: the call and its result stay evidence.
QUESTION_ARGUMENTS = ("query", "question")


def message_echoes(message: Message, query: str) -> bool:
    """The message is a tool call whose query asks (see above), or a prompt that repeats `query`
    without asking ("build the docker image" given again in a later session: the earlier one is
    the prompt itself, not what was done; its reply stays). A question that repeats it folds into
    its answer instead (core.recall.answers_first)."""
    if message.role == "user":
        return not asks(message.content or "") and repeats(message.content or "", query)
    if message.role != "tool":
        return False
    call = tool_call(message.content)
    return call is not None and any(isinstance(value := call[1].get(key), str) and asks(value)
                                    for key in QUESTION_ARGUMENTS)


def message_answers(messages: list[Message], scope: QuerySet[Message] | None = None) -> dict[str, Message | None]:
    """For each of `messages` that is a user turn asking something, the turn that answers it, as
    a loaded Message: the last assistant turn before the next user turn (its final reply, after
    any tool calls), within ROUND_REACH turns and within `scope` (the rows the caller may return);
    None for a question nobody answered there."""
    questions = [m for m in messages if getattr(m, "role", None) == "user" and asks(m.content or "")]
    if not questions:
        return {}
    window = Q()
    for question in questions:
        window |= Q(conversation_id=question.conversation_id, turn_number__gt=question.turn_number,
                    turn_number__lte=question.turn_number + ROUND_REACH)
    following = (Message.objects.filter(window, role__in=("user", "assistant"))
                 .order_by("conversation_id", "turn_number").values_list("pk", "conversation_id", "turn_number", "role"))
    by_conversation: dict[Any, list[tuple[Any, int, str]]] = {}
    for pk, conversation_id, turn, role in following:
        by_conversation.setdefault(conversation_id, []).append((pk, turn, role))
    chosen: dict[str, Any] = {str(question.pk): None for question in questions}
    for question in questions:
        answer = None
        for pk, turn, role in by_conversation.get(question.conversation_id, []):
            if turn <= question.turn_number or turn > question.turn_number + ROUND_REACH:
                continue
            if role == "user":
                break
            answer = pk
        if answer is not None:
            chosen[str(question.pk)] = answer
    wanted = {pk for pk in chosen.values() if pk is not None}
    loaded: dict[str, Message] = {}
    if wanted:
        rows = (scope if scope is not None else Message.objects.all()).filter(pk__in=wanted)
        loaded = {str(row.pk): row for row in rows.defer("search_vector")}
    return {key: loaded.get(str(pk)) if pk is not None else None for key, pk in chosen.items()}
