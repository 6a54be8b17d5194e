"""Whether the agent used what automatic recall injected: per item of an Injection, judged from the
turn that followed it (the session's messages after the injection's message, up to the next
prompt). An item counts as used when the agent
- fetched it by id (a tool call names the memory, the medallion, the conversation it came from);
- opened, edited or ran a file the item names that the prompt did not (the agent would have
  touched the prompt's own files anyway);
- repeated what is distinctive in it: an identifier (`RATE_BASIS_POINTS`, `round_half_even`,
  `retry_after`, `v2.3`, `8443`) or at least WORDS_MIN of its rarer words, in its replies or the
  arguments of its tool calls, not in what the prompt already said. Tool *results* do not count:
  a file read back holds the item's identifiers whether the agent heeded it or not.
bench/injection_use.py measures this on a labelled set (tests/data/injection_use.jsonl).

Judgments are kept in their own table (core.models.ItemUse, keyed by the injection's id), made
once the turn is over (a later prompt exists, or the injection is older than TURN_OVER), so the
transcript's "Winni added" note and the dashboard read them without judging twice. This module
moves with the injections into the agents app."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Iterable

from django.db.models import Count, Q
from django.utils import timezone

from agents.models import Injection
from conversations import services as conversations
from core import anchors, paths
from core.logs import storage_op
from core.models import ItemUse

# A turn with no later prompt is over after this long (the session ended or went quiet).
TURN_OVER = timedelta(minutes=30)
# Messages of the following turn read at most, and characters of each.
FOLLOWING_MAX = 60
TEXT_CHARS = 8_000
# Rarer words of the item the agent must repeat (without an identifier) to have used it.
WORDS_MIN = 3

_IDENTIFIER = re.compile(r"`([^`\n]{2,60})`|\b([A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]+|"
                         r"[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]+|[A-Z]{2,}[A-Z0-9_]*|v?\d+(?:\.\d+)+|\d{3,})\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{4,}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Words too common in coding sessions to tell anything (besides english stop words of 5+ letters).
COMMON = frozenset("""
about above after again against because before being below between could doesn during every first
found further having their there these those through under until where which while would should
still other another since thing things using makes making change changes changed check checks
function functions class method value values string number return returns called calls file files
there's that's what's let's we're you're they're think looks looked right wrong works working
error errors issue issues problem problems please thanks update updated updates instead without
test tests tested passes passing failed failing fixed fixes added adding remove removed there
always never maybe really should would could might point points place module modules code line
lines default defaults simple quick small large question answer decided decision memory session
""".split())


@dataclass(frozen=True)
class Turn:
    """One message of the turn after an injection."""

    role: str
    content: str


def _stem(word: str) -> str:
    word = word.lower().strip("'-")
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def identifiers(text: str) -> set[str]:
    found = set()
    for match in _IDENTIFIER.finditer(text):
        token = (match.group(1) or match.group(2) or "").strip()
        if token and not _UUID.fullmatch(token):
            found.add(token.lower())
    return found


def words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text) if w.lower() not in COMMON}


def _said(turn: Turn) -> str:
    """What the agent itself said or asked for in a message: a reply's text, a tool call's name
    and arguments (never its result)."""
    if turn.role == "assistant":
        return turn.content[:TEXT_CHARS]
    if turn.role != "tool":
        return ""
    call = conversations.tool_call(turn.content)
    return "" if call is None else f"{call[0]} {json.dumps(call[1], ensure_ascii=False)}"[:TEXT_CHARS]


def _touched(turn: Turn, roots: list[str], cwd: str | None) -> set[str]:
    """Project files a tool call opened, edited or ran (its path arguments and its command's paths)."""
    call = conversations.tool_call(turn.content) if turn.role == "tool" else None
    if call is None:
        return set()
    name, args, _ = call
    found = {paths.project_path(value, roots=roots, cwd=cwd) for key in ("file_path", "notebook_path", "path",
                                                                          "absolute_path")
             if isinstance(value := args.get(key), str)}
    command = args.get("command", args.get("cmd"))
    if isinstance(command, (str, list)):
        text = command if isinstance(command, str) else " ".join(map(str, command))
        found |= set(anchors.named_files(text, roots))
    return {path for path in found if path}


def _same_file(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def judge(*, item_text: str, ids: Iterable[str], prompt: str, following: list[Turn], roots: list[str] | None = None,
          cwd: str | None = None) -> tuple[bool, str]:
    """(used, evidence) for one injected item (see the module's docstring). `ids`: the item's own
    id and those of where it came from (a turn's conversation, a decision's medallion)."""
    roots = list(roots or [])
    said = "\n".join(_said(turn) for turn in following[:FOLLOWING_MAX])
    for value in ids:
        if value and len(value) >= 8 and value in said:
            return True, f"fetched it by id ({value[:36]})"
    prompt_files = anchors.named_files(prompt, roots)
    named = [path for path in anchors.named_files(item_text, roots)
             if not any(_same_file(path, asked) for asked in prompt_files)]
    if named:
        touched = set().union(*(_touched(turn, roots, cwd) for turn in following[:FOLLOWING_MAX]))
        for path in named:
            hit = next((t for t in sorted(touched) if _same_file(t, path)), None)
            if hit:
                return True, f"opened or changed {hit}"
    said_lower = said.lower()
    fresh = identifiers(item_text) - identifiers(prompt)
    repeated = sorted(token for token in fresh if token in said_lower)
    if repeated:
        return True, f"repeated {', '.join(repeated[:3])}"
    shared = sorted((words(item_text) - words(prompt)) & words(said))
    if len(shared) >= WORDS_MIN:
        return True, f"repeated its words {', '.join(shared[:4])}"
    return False, ""


# --- judging stored injections ----------------------------------------------------------------------


def _item_lines(injection: Injection) -> list[str]:
    """The block's item lines in the order of its items (a line per item, its source in brackets
    first; a possibly stale item's warning on the next line belongs to it), without the brackets:
    the snippet the agent read."""
    lines: list[str] = []
    for line in injection.text.splitlines():
        if line.startswith("- ["):
            lines.append(line.split("] ", 1)[1] if "] " in line else line)
        elif lines and line.startswith("  "):
            lines[-1] += "\n" + line.strip()
    return lines


def item_ids(item: dict[str, Any]) -> list[str]:
    source = item.get("source") or {}
    found = [str(item.get("id", ""))]
    # Its source's short name too (the block's line gives it: core.shortref), which a read takes.
    found += [str(source[key]) for key in ("conversation_id", "medallion_id", "ref") if source.get(key)]
    # A decision's id is "<medallion id>:<decision id>": its medallion is what would be fetched.
    return [value for part in found for value in {part, part.split(":", 1)[0]} if value]


def injection_judge(injection: Injection) -> list[ItemUse]:
    """Judge each item of a delivered injection whose following turn is over; kept, so a second
    call reads what the first decided. Nothing for an injection still in its turn."""
    done = list(ItemUse.objects.filter(injection_id=injection.pk))
    if done or not injection.delivered or not injection.items or injection.message_id is None:
        return done
    turn = conversations.message_following_turn(injection.message_id, limit=FOLLOWING_MAX)
    if turn is None:
        return []
    if not turn.closed and timezone.now() - injection.created_at < TURN_OVER:
        return []
    following = [Turn(role, content) for role, content in turn.turns]
    prompt = turn.content if turn.role == "user" else injection.file_path
    rows = []
    lines = _item_lines(injection)
    for index, item in enumerate(injection.items):
        text = lines[index] if index < len(lines) else ""
        used, evidence = judge(item_text=text, ids=item_ids(item), prompt=prompt,
                               following=following, roots=turn.roots, cwd=turn.cwd)
        rows.append(ItemUse(injection_id=injection.pk, item_key=f"{item.get('kind')}:{item.get('id')}",
                            kind=str(item.get("kind", ""))[:40], project_id=injection.project_id, used=used,
                            evidence=evidence[:300]))
    with storage_op("injection_use.judge", injection_id=injection.pk, items=len(rows)):
        ItemUse.objects.bulk_create(rows, ignore_conflicts=True)
    return list(ItemUse.objects.filter(injection_id=injection.pk))


def injections_judge(injections: Iterable[Injection]) -> dict[int, list[ItemUse]]:
    return {injection.pk: injection_judge(injection) for injection in injections}


def uses_said(uses: list[ItemUse]) -> str:
    """The transcript note's words for an injection's judged items: "; used 2 of 3: memory
    (repeated round_half_even), decision (opened src/x.py); ignored: message"; "" before judging."""
    if not uses:
        return ""
    used = [use for use in uses if use.used]
    said = f"; used {len(used)} of {len(uses)}"
    if used:
        said += ": " + ", ".join(f"{use.kind} ({use.evidence})" for use in used)
    ignored = [use.kind for use in uses if not use.used]
    return said + (f"; ignored: {', '.join(ignored)}" if ignored else "")


def prompt_terms(injection: Injection) -> list[str]:
    """The specific words of the prompt an injection answered (automatic recall keeps them in its
    gate; a file's injection has none)."""
    terms = (injection.gate or {}).get("terms") if isinstance(injection.gate, dict) else None
    return [str(term)[:100] for term in terms[:PRIOR_TERMS]] if isinstance(terms, list) else []


def judge_pending(*, limit: int = 500) -> int:
    """Judge the delivered injections whose turn is over and that have no judgment yet (the
    dashboard calls it before counting, and the worker every JUDGE_EVERY_SECONDS, so the use prior
    learns without anyone looking). Returns how many were judged."""
    pending = (Injection.objects.filter(delivered=True, message__isnull=False)
               .exclude(pk__in=ItemUse.objects.values("injection_id")).exclude(item_keys=[])
               .order_by("created_at")[:limit])
    return sum(1 for injection in pending if injection_judge(injection))


def use_counts(*, days: int = 30) -> list[dict[str, Any]]:
    """Per project and kind: items injected, used, ignored (judged ones) over the last `days`."""
    since = timezone.now() - timedelta(days=days)
    rows = (ItemUse.objects.filter(judged_at__gte=since).values("project__slug", "kind")
            .annotate(injected=Count("id"), used=Count("id", filter=Q(used=True))).order_by("project__slug", "kind"))
    return [{"project": row["project__slug"] or "(no project)", "kind": row["kind"], "injected": row["injected"],
             "used": row["used"], "ignored": row["injected"] - row["used"]} for row in rows]


# --- the use prior (automatic recall's ranking) -----------------------------------------------------

# How far use moves an item's score at most: ×(1 ± PRIOR_STRENGTH). Mild on purpose: it reorders
# items whose scores are close, it does not overturn recall's ranking (and never what the block
# holds: agents.autorecall.prior_order). Chosen with PRIOR_IGNORED_MIN by bench/use_prior.py on
# the tuning half of LoCoMo (0.1, 0.2 and 0.3 tied; the mildest kept).
PRIOR_STRENGTH = 0.1
# An item never used moves down once it was ignored this many times for such prompts (bench/use_prior.py:
# 1 put more evidence among the block's first 3 items than 2 or 3; the factor itself grows with the
# count, so an item ignored again and again moves furthest).
PRIOR_IGNORED_MIN = 1
# Judgments read per recall at most (the newest): the one query stays small whatever the history.
PRIOR_READ = 400
# A prompt's specific words kept with a judgment (the gate's terms, most specific first).
PRIOR_TERMS = 12
# The worker judges finished turns this often (winni_site.celery's beat schedule).
JUDGE_EVERY_SECONDS = 300


def similar_prompt(terms: set[str], earlier: Iterable[str]) -> bool:
    """Whether an earlier prompt (its specific words) was like this one: it shares two of them (one,
    when this prompt has only one). One shared name ("Caroline", "invoice") is not the same question."""
    return len(terms & set(earlier)) >= min(2, len(terms)) > 0


def prior_for(*, keys: list[str], terms: list[str], project_id: int | None) -> dict[str, float]:
    """Each candidate item's factor from its use for similar prompts of this project (similar_prompt):
    1 + PRIOR_STRENGTH × (used − ignored) / (used + ignored + 1), so an item ignored once weighs
    0.95 and tends to 0.9 when ignored again and again, one used once 1.05 and again and again 1.1.
    Items with no such judgment, or never used and ignored fewer than PRIOR_IGNORED_MIN times, are
    left out (factor 1). One indexed query (item_use_key), PRIOR_READ rows at most."""
    wanted = set(terms[:PRIOR_TERMS])
    if not keys or not wanted:
        return {}
    judged = ItemUse.objects.filter(item_key__in=list(dict.fromkeys(keys)))
    judged = judged.filter(project_id=project_id) if project_id is not None else judged.filter(project__isnull=True)
    rows = judged.order_by("-judged_at").values_list("item_key", "used", "terms")[:PRIOR_READ]
    counts: dict[str, list[int]] = {}
    for key, used, earlier in rows:
        if similar_prompt(wanted, earlier):
            counts.setdefault(key, [0, 0])[0 if used else 1] += 1
    return {key: 1 + PRIOR_STRENGTH * (used - ignored) / (used + ignored + 1)
            for key, (used, ignored) in counts.items() if used or ignored >= PRIOR_IGNORED_MIN}
