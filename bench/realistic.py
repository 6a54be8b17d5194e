"""A realistic corpus: coding-agent sessions (Claude Code) as Winni's capture path stores them.

    from bench.realistic import RealisticCorpus, describe, load_realistic
    corpus = RealisticCorpus(conversations=100_000, messages=1_000_000, seed=0)
    for conversation in corpus: ...          # a stream of ConversationRow (bench/corpus.py), O(1) memory
    describe(corpus).table()                  # the statistics below, measured from the output
    load_realistic(conversations=..., messages=..., seed=0)   # COPY into the configured database

    .venv/bin/python bench/realistic.py --messages 10000 --stats            # generate, print the statistics
    .venv/bin/python bench/realistic.py --messages 10000 --load             # COPY into WINNI_DATA_DIR's database
    .venv/bin/python bench/realistic.py --show 2                            # print two sessions
    .venv/bin/python bench/realistic.py --describe-db                       # the statistics of a real database

Each conversation is one Claude Code session of one project (`metadata.project`, `metadata.cwd`),
stored either as the hooks store it live (source `claude-code`: UserPromptSubmit → user,
PostToolUse → one `tool` message `{"tool_name", "tool_input", "tool_response"}`, Stop → the turn's
last assistant text) or as `manage.py import_claude_transcripts` stores a transcript (source
`claude-code-transcript`: every text block → user/assistant, every `tool_use` block and every
`tool_result` block → its own `tool` message of JSON), with the metadata, session ids, capture keys
and the 20,000-character cap (`cap_text`, with its "[truncated by Winni: …]" note) of
agents/capture.py. The capture path stores no `system` messages, no thinking, no attachments.
Text is made of per-project vocabularies (identifiers, file trees with a few hot files, recurring
errors, dependencies, people) and Claude Code's output shapes (Read's `     1→` numbered lines and
system reminder, pytest/vitest/go/cargo runs with failures and tracebacks, git diffs and logs,
curl JSON, Grep/Glob listings, TodoWrite lists, Task reports, MCP results), so full-text, path-part
and semantic search meet what they meet in real use. Facts (`RealisticCorpus.facts`: a question, a
statement, a unique ticket id) are stated in some prompts and replies and asked about in others.
Deterministic for a seed (also the UUIDs); sessions start over `days` (default 180) ending `end`
(default 2026-11-01), on working hours, each project active in its own window of those months.

Where the numbers come from
- Measured (2026-11-24) by importing tests/data/claude-code-2.1.197-session.jsonl (a real Claude
  Code 2.1.197 session, made against a stand-in model, so its lengths say nothing) through the
  real import into a bench database: 22 transcript lines → 8 messages (3 user, 3 assistant,
  2 tool: one tool_use of 88 characters, one tool_result of 350); queue-operation, attachment,
  last-prompt and mode lines store nothing; the conversation metadata holds source, cwd,
  git_branch, transcript_path, claude_code_version (no project: `project` here anticipates the
  projects scope); message metadata as generated here. From the code: only tool messages are
  capped; hooks store only successful tool calls (a failed call is a PostToolUseFailure event,
  which Winni does not take), so errors appear only in transcript-style sessions.
- Public, one user each (structure, not lengths): a 6,120-session corpus (mpiv.ai, "What I learned
  from 245,306 Claude Code tool calls") has 7.2 human prompts, 40 tool calls and ≈ 33 assistant
  text/thinking rows per session → TOOLS_PER_TURN ≈ 5.5 and, assuming half of those rows are
  thinking, ≈ 16 text blocks per session: one reply per turn plus an interstitial text before
  TEXT_BEFORE_TOOL ≈ 0.22 of the tool calls. Tool mix (the cc-multi README's run over 1,835
  sessions: Bash 36.9%, Read 24.8%, Edit 15.0%, Grep 11.2%, Write 4.6%, Glob 3.0%, WebSearch 1.8%,
  TaskCreate/TaskUpdate 2.7%) → TOOL_MIX, with TodoWrite for the task-list tools, and WebFetch,
  Task (sub-agents) and MCP tools assumed at 1.5% each.
- Assumed (no real lengths were reachable; each is a log-normal median and spread in
  realistic_content.py): prompts median 180 characters (a few lines; 10% over 900 with pasted
  logs or code), replies median 900 (a few paragraphs, code blocks in about half), interstitial
  texts one or two sentences; source files median 150 lines (≈ 5,000 characters, long tail to
  2,500 lines: Read returns up to 2,000 lines), 30% of reads a window of 50–200 lines; test runs
  fail 35% of the time, builds 25%; diffs median 2,500 characters; sessions of `messages /
  conversations` messages on average (log-normal, 2–200; real sessions are longer, ≈ 100
  messages, so `--conversations` can be lowered for that); projects Zipf-popular, half the
  sessions captured by hooks (HOOK_SHARE), 3% of transcript sessions opening with a compaction
  summary.

Measured from the output (2026-11-24, `--messages 100000 --conversations 10000 --stats`, seed 0;
tests/agents/test_bench_realistic.py holds the code to these numbers within tolerance):

100,000 messages in 10,000 sessions of 20 projects (claude-code 4,957, claude-code-transcript
5,043); session size p50 6, p90 22, max 197; 2026-05-05 to 2026-10-30

| role | share | p10 | p50 | p90 | p99 | max |
|---|---|---|---|---|---|---|
| user | 17.6% | 21 | 258 | 993 | 4,175 | 20,000 |
| assistant | 23.1% | 62 | 723 | 2,704 | 7,489 | 20,000 |
| tool | 59.3% | 150 | 965 | 7,875 | 20,046 | 20,046 |
| system | 0.0% | 0 | 0 | 0 | 0 | 0 |

| tool message | share of calls | messages | p10 | p50 | p90 | p99 | max |
|---|---|---|---|---|---|---|---|
| Bash call | 35.1% | 5.0% | 131 | 160 | 200 | 371 | 450 |
| Bash result |  | 5.0% | 105 | 538 | 3,194 | 11,969 | 20,046 |
| Bash hook | 35.1% | 10.8% | 207 | 629 | 3,205 | 11,289 | 20,046 |
| Read call | 25.2% | 3.7% | 137 | 148 | 175 | 187 | 201 |
| Read result |  | 3.7% | 2,457 | 5,338 | 17,122 | 20,046 | 20,046 |
| Read hook | 25.2% | 7.6% | 1,981 | 4,476 | 14,388 | 20,046 | 20,046 |
| Edit call | 13.8% | 1.9% | 309 | 570 | 1,130 | 1,963 | 3,363 |
| Edit result |  | 1.9% | 640 | 931 | 1,343 | 1,929 | 2,837 |
| Edit hook | 13.8% | 4.2% | 3,446 | 7,424 | 20,045 | 20,046 | 20,046 |
| Grep call | 7.9% | 1.2% | 173 | 183 | 197 | 205 | 210 |
| Grep result |  | 1.2% | 160 | 572 | 3,307 | 11,740 | 17,648 |
| Grep hook | 7.9% | 2.4% | 296 | 778 | 3,119 | 10,745 | 19,328 |
| Glob call | 4.0% | 0.6% | 93 | 96 | 101 | 105 | 107 |
| Glob result |  | 0.6% | 258 | 806 | 3,160 | 6,097 | 6,853 |
| Glob hook | 4.0% | 1.2% | 317 | 832 | 3,093 | 6,350 | 7,379 |
| TodoWrite call | 4.0% | 0.6% | 433 | 937 | 1,431 | 1,593 | 1,651 |
| TodoWrite result |  | 0.6% | 247 | 247 | 247 | 247 | 247 |
| TodoWrite hook | 4.0% | 1.2% | 1,270 | 2,698 | 4,108 | 4,732 | 5,038 |
| Write call | 3.9% | 0.6% | 1,235 | 2,897 | 8,988 | 20,045 | 20,046 |
| Write result |  | 0.6% | 173 | 182 | 194 | 205 | 208 |
| Write hook | 3.9% | 1.2% | 2,295 | 5,829 | 17,449 | 20,046 | 20,046 |
| Task call | 1.6% | 0.2% | 685 | 1,151 | 2,171 | 3,887 | 6,333 |
| Task result |  | 0.2% | 1,030 | 2,433 | 6,056 | 12,961 | 15,285 |
| Task hook | 1.6% | 0.5% | 2,805 | 4,827 | 9,205 | 16,851 | 19,846 |
| WebFetch call | 1.5% | 0.2% | 194 | 215 | 227 | 233 | 238 |
| WebFetch result |  | 0.2% | 1,127 | 2,481 | 5,554 | 9,313 | 11,269 |
| WebFetch hook | 1.5% | 0.5% | 1,451 | 2,792 | 5,713 | 8,893 | 12,640 |
| mcp call | 1.5% | 0.2% | 149 | 153 | 173 | 179 | 180 |
| mcp result |  | 0.2% | 422 | 1,045 | 1,998 | 3,900 | 6,269 |
| mcp hook | 1.5% | 0.5% | 486 | 1,127 | 1,934 | 3,429 | 4,967 |
| WebSearch call | 1.5% | 0.2% | 110 | 119 | 143 | 157 | 184 |
| WebSearch result |  | 0.2% | 1,904 | 2,973 | 5,368 | 6,992 | 7,492 |
| WebSearch hook | 1.5% | 0.5% | 1,961 | 2,965 | 4,890 | 8,127 | 9,509 |

| role | code | path | stack trace | JSON inside | capped |
|---|---|---|---|---|---|
| user | 18.2% | 47.7% | 7.5% | 0.6% | 0.0% |
| assistant | 49.1% | 59.1% | 1.7% | 5.0% | 0.0% |
| tool | 38.7% | 65.9% | 1.6% | 11.5% | 2.4% |

Code: a fenced block, Read's numbered lines, a diff hunk or source lines; path: a file path with an
extension; JSON inside: a JSON object within the text (tool messages are JSON anyway: this looks
inside their payload); capped: cut by the 20,000-character cap. With 100 messages per session
(`--conversations` = messages / 100, nearer real sessions) the role mix is user 11%, assistant
16%, tool 73%.

Vectors: latency corpora (bench/memory.py --corpus realistic) give every message a random unit
vector, as the synthetic corpus does (cosine search costs the same for any vector; ranking quality
is bench/retrieval.py's job); embedding throughput embeds real samples of this corpus.
"""
from __future__ import annotations

import argparse
import bisect
import datetime as dt
import json
import math
import random
import re
import sys
import time
import uuid
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.corpus import ConversationRow, LoadStats, MessageRow, conversation_sizes, copy_corpus  # noqa: E402
from bench.realistic_content import (  # noqa: E402
    PROJECT_FIRST,
    PROJECT_SECOND,
    Fact,
    Files,
    Project,
    Tools,
    Writer,
    lognormal,
    make_project,
    zipf_cdf,
)

# What agents/capture.py does to a tool message (tests/agents/test_bench_realistic.py checks both).
CAPTURE_LIMIT = 20_000
TRUNCATED = "\n… [truncated by Winni: {dropped} more characters]"
HOOK_SHARE = 0.5
TOOLS_PER_TURN = 5.5
TEXT_BEFORE_TOOL = 0.22
COMPACT_SHARE = 0.03
TOOL_MIX = {"Bash": 0.35, "Read": 0.25, "Edit": 0.14, "Grep": 0.08, "Glob": 0.04, "Write": 0.04, "TodoWrite": 0.04,
            "WebFetch": 0.015, "WebSearch": 0.015, "Task": 0.015, "mcp": 0.015}
END = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
CORPUS_TAG = "realistic"  # conversation metadata `bench_corpus`: what bench scripts reuse or clear


@dataclass(slots=True)
class Message(MessageRow):
    tool: str | None = None  # the generator's own labels, not stored: tests check describe() against them
    block: str = "text"
    fact: str | None = None  # the ticket of the fact this message states


@dataclass(slots=True)
class Conversation(ConversationRow):
    project: str = ""
    style: str = "hook"


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def cap_text(text: str, limit: int = CAPTURE_LIMIT, *, dropped: int | None = None) -> str:
    """agents.capture.cap_text; `dropped` when the text was generated shorter than it would be."""
    if len(text) <= limit and dropped is None:
        return text
    return text[:limit] + TRUNCATED.format(dropped=dropped if dropped is not None else len(text) - limit)


def default_projects(conversations: int) -> int:
    return max(20, min(200, conversations // 500))


class RealisticCorpus:
    """`conversations` sessions holding `messages` messages over `projects` projects; iterate it
    (more than once if you like: each pass is the same corpus)."""

    def __init__(self, *, conversations: int, messages: int, seed: int = 0, projects: int | None = None,
                 days: int = 180, end: dt.datetime = END, hook_share: float = HOOK_SHARE, min_per: int = 2,
                 max_per: int = 200) -> None:
        if conversations < 1 or messages < 2 * conversations:
            raise ValueError("need at least one conversation and two messages per conversation")
        self.conversations, self.messages, self.seed = conversations, messages, seed
        self.days, self.end, self.hook_share = days, end, hook_share
        self.min_per, self.max_per = min_per, max_per
        rng = random.Random(seed)
        count = projects or default_projects(conversations)
        names = [f"{a}-{b}" for a in PROJECT_FIRST for b in PROJECT_SECOND]
        rng.shuffle(names)
        self.projects = [make_project(rng, index, name) for index, name in enumerate(names[:count])]
        self.project_cdf = zipf_cdf(count, 1.0)
        # Each project is worked on in its own stretch of the months (at least three weeks).
        self.windows = []
        for _ in self.projects:
            length = rng.uniform(min(21, days), days)
            self.windows.append((rng.uniform(0, days - length), length))

    @property
    def facts(self) -> list[Fact]:
        return [fact for project in self.projects for fact in project.facts]

    def project_share(self, project: Project) -> float:
        """The expected share of sessions (so of messages) of a project."""
        previous = self.project_cdf[project.index - 1] if project.index else 0.0
        return (self.project_cdf[project.index] - previous) / self.project_cdf[-1]

    def __iter__(self) -> Iterator[Conversation]:
        import numpy as np

        sizes = conversation_sizes(np.random.default_rng(self.seed), self.conversations, self.messages,
                                   self.min_per, self.max_per)
        rng = random.Random(self.seed + 1)
        files = Files(self.seed)
        session = _Session(self, rng, Tools(rng, files), Writer(rng, Tools(rng, files)))
        for size in sizes:
            yield session.make(int(size))


class _Session:
    """Makes one session after another from one random stream."""

    def __init__(self, corpus: RealisticCorpus, rng: random.Random, tools: Tools, writer: Writer) -> None:
        self.corpus, self.rng, self.tools, self.writer = corpus, rng, tools, writer
        self.tool_names = list(TOOL_MIX)
        self.tool_cdf = []
        total = 0.0
        for weight in TOOL_MIX.values():
            total += weight
            self.tool_cdf.append(total)

    def _start(self, project: Project) -> dt.datetime:
        rng = self.rng
        offset, length = self.corpus.windows[project.index]
        while True:
            day = self.corpus.end - dt.timedelta(days=self.corpus.days - offset - rng.uniform(0, length))
            if day.weekday() < 5 or rng.random() < 0.3:
                break
        hour = min(22.9, max(7.0, rng.gauss(14, 3)))
        return day.replace(hour=int(hour), minute=int(hour % 1 * 60), second=rng.randrange(60), microsecond=0)

    def make(self, size: int) -> Conversation:
        rng, corpus = self.rng, self.corpus
        project = corpus.projects[bisect.bisect_left(corpus.project_cdf, rng.random() * corpus.project_cdf[-1])]
        style = "hook" if rng.random() < corpus.hook_share else "transcript"
        self.project, self.style = project, style
        self.when = self._start(project)
        self.parent: str | None = None
        self.messages: list[Message] = []
        session_id = str(_uuid(rng))
        budget = size
        if style == "transcript" and size >= 6 and rng.random() < COMPACT_SHARE:
            summary = self.writer.compact_summary(project, lognormal(rng, 6000, 0.5, 1500, CAPTURE_LIMIT))
            self._add("user", summary[:CAPTURE_LIMIT], block="compact")
            budget -= 1
        while budget > 0:
            tools = int(math.log(1.0 - rng.random()) / math.log(1.0 - 1.0 / (1.0 + TOOLS_PER_TURN)))
            natural = 2 + (tools if style == "hook" else round(tools * (2 + TEXT_BEFORE_TOOL)))
            final = budget - natural < 2
            self._turn(budget if final else natural, tools)
            budget = 0 if final else budget - natural
        cwd = project.root if rng.random() < 0.9 else f"{project.root}/{project.path(rng).rsplit('/', 1)[0]}"
        metadata = {"source": "claude-code" if style == "hook" else "claude-code-transcript", "cwd": cwd,
                    "git_branch": rng.choice(project.branches), "project": project.name,
                    "transcript_path": f"/home/{project.root.split('/')[2]}/.claude/projects/"
                                       f"{cwd.replace('/', '-')}/{session_id}.jsonl",
                    "bench_corpus": CORPUS_TAG}
        if style == "transcript":
            age = 1 - (corpus.end - self.messages[0].created_at).days / max(corpus.days, 1)
            metadata["claude_code_version"] = f"2.{int(age > 0.5)}.{int(age * 390) % 200 + 1}"
        return Conversation(_uuid(rng), session_id, metadata, self.messages[0].created_at,
                            self.messages[-1].created_at, self.messages, project=project.name, style=style)

    def _turn(self, count: int, tools: int) -> None:
        """One prompt, the tool calls it leads to, the reply: exactly `count` messages (≥ 2)."""
        rng, writer, project = self.rng, self.writer, self.project
        prompt, fact = writer.prompt(project, lognormal(rng, 180, 1.25, 2, CAPTURE_LIMIT))
        self._add("user", prompt[:CAPTURE_LIMIT], block="prompt", fact=fact, gap=lognormal(rng, 90, 1.2, 5, 3600))
        middle = count - 2
        while middle > 0:
            if self.style == "hook":
                self._tool(self._call())
                middle -= 1
            elif middle == 1 or (middle >= 3 and rng.random() < TEXT_BEFORE_TOOL):
                self._add("assistant", writer.interstitial(project), block="text", gap=lognormal(rng, 4, 0.8, 1, 120))
                middle -= 1
            else:
                self._tool(self._call())
                middle -= 2
        reply, fact = writer.reply(project, lognormal(rng, 900, 0.95, 20, CAPTURE_LIMIT))
        self._add("assistant", reply[:CAPTURE_LIMIT], block="reply", fact=fact, gap=lognormal(rng, 8, 0.8, 1, 300))

    def _call(self) -> Any:
        name = self.tool_names[bisect.bisect_left(self.tool_cdf, self.rng.random() * self.tool_cdf[-1])]
        call = self.tools.call(name, self.project)
        while self.style == "hook" and call.is_error:  # hooks store successful calls only
            call = self.tools.call(name, self.project)
        return call

    def _tool(self, call: Any) -> None:
        rng = self.rng
        tool_id = f"toolu_01{rng.getrandbits(88):022x}"
        label = "mcp" if call.name.startswith("mcp__") else call.name
        gap = lognormal(rng, 6, 0.9, 1, 600)
        if self.style == "hook":
            body = {"tool_name": call.name, "tool_input": call.input, "tool_response": call.response}
            content = cap_text(json.dumps(body, ensure_ascii=False))
            self._add("tool", content, block="hook", tool=label, gap=gap,
                      extra={"hook_event": "PostToolUse", "tool_name": call.name, "tool_use_id": tool_id})
            return
        use = {"tool_use": call.name, "id": tool_id, "input": call.input}
        self._add("tool", cap_text(json.dumps(use, ensure_ascii=False)), block="tool_use", tool=label, gap=gap,
                  line_type="assistant")
        result = {"tool_result": call.result, "tool_use_id": tool_id, "is_error": call.is_error}
        self._add("tool", cap_text(json.dumps(result, ensure_ascii=False)), block="tool_result", tool=label,
                  gap=lognormal(rng, 3, 1.0, 1, 600), line_type="user")

    def _add(self, role: str, content: str, *, block: str, tool: str | None = None, fact: Fact | None = None,
             gap: int = 5, extra: dict[str, Any] | None = None, line_type: str | None = None) -> None:
        rng = self.rng
        self.when = self.when + dt.timedelta(seconds=gap, milliseconds=rng.randrange(1000))
        if self.style == "hook":
            event = {"user": "UserPromptSubmit", "assistant": "Stop"}.get(role)
            metadata = {**({"hook_event": event} if event else {}), **(extra or {}),
                        "capture_key": f"hook:{rng.getrandbits(128):032x}"}
        else:
            line = str(_uuid(rng))
            metadata = {"transcript_uuid": line, "parent_uuid": self.parent, "line_type": line_type or role,
                        "is_sidechain": False, "block_type": block if block in ("tool_use", "tool_result") else "text",
                        "capture_key": f"transcript:{line}:0"}
            self.parent = line
        if fact is not None:
            fact.said += 1
        self.messages.append(Message(_uuid(rng), len(self.messages) + 1, role, content, self.when, metadata,
                                     tool=tool, block=block, fact=fact.ticket if fact else None))


# --- what a corpus holds (from its stored form) ----------------------------------------------------------

CODE = re.compile(r"```|^\s*\d+→|^(?:def |class |import |from [\w.]+ import|export |function |const |func |fn |"
                  r"pub |impl |package |@@ )|^\s+(?:return|if|for|async|await|self\.)\b", re.M)
PATH = re.compile(r"(?:/[\w.@-]+){2,}\.\w{1,5}\b|\b[\w-]+/[\w./-]*\.\w{1,5}\b")
TRACE = re.compile(r"Traceback \(most recent call last\)|^\s+at \S+ \(.+:\d+:\d+\)|panicked at|^goroutine \d+|"
                   r"^\s+File \".+\", line \d+", re.M)
INNER_JSON = re.compile(r'\{\s*"[\w.-]+"\s*:')
TOOL_USE = re.compile(r'^\{"tool_use": "([^"]+)"')
TRUNCATION_MARK = "… [truncated by Winni: "


def _tool_label(name: str) -> str:
    return "mcp" if name.startswith("mcp__") else name


def _payload(content: str) -> str:
    """The text a tool message carries inside its JSON wrapping (what a reader would call its
    output): unescaped, without the wrapper's own keys."""
    try:
        body = json.loads(content)
    except ValueError:  # cut by the capture cap: no longer JSON
        return content.replace("\\n", "\n").replace('\\"', '"')
    strings: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for key in ("tool_input", "tool_response", "input", "tool_result"):
        if key in body:
            walk(body[key])
    return "\n".join(strings) if strings else content


def classify(role: str, content: str, metadata: dict[str, Any] | None, pending: deque[str]) -> tuple[str, str | None]:
    """(kind, tool) of a stored message: kind is user, assistant, or `<tool> call|result|hook`;
    `pending` holds the tool names of this conversation's tool_use messages still waiting for
    their result (a capped result has lost its tool_use_id)."""
    metadata = metadata or {}
    if role != "tool":
        return role, None
    if metadata.get("hook_event") == "PostToolUse":
        tool = _tool_label(str(metadata.get("tool_name")))
        return f"{tool} hook", tool
    if metadata.get("block_type") == "tool_use":
        match = TOOL_USE.match(content)
        tool = _tool_label(match.group(1)) if match else "?"
        pending.append(tool)
        return f"{tool} call", tool
    if metadata.get("block_type") == "tool_result":
        tool = pending.popleft() if pending else "?"
        return f"{tool} result", tool
    return "other tool", None


def _percentile(ordered: list[int], q: float) -> int:
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0


@dataclass
class Distribution:
    messages: int = 0
    roles: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)  # tool calls (a tool_use, or a hook message)
    lengths: dict[str, list[int]] = field(default_factory=dict)
    features: dict[str, Counter[str]] = field(default_factory=dict)  # role -> feature -> messages
    sessions: list[int] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)
    projects: Counter[str] = field(default_factory=Counter)
    first: dt.datetime | None = None
    last: dt.datetime | None = None

    def add(self, role: str, content: str, metadata: dict[str, Any] | None, pending: deque[str]) -> str:
        kind, tool = classify(role, content, metadata, pending)
        self.messages += 1
        self.roles[role] += 1
        if kind.endswith((" call", " hook")):
            self.calls[tool or "?"] += 1
        size = len(content)
        for key in (role, kind) if kind != role else (role,):
            self.lengths.setdefault(key, []).append(size)
        text = _payload(content) if role == "tool" else content
        found = self.features.setdefault(role, Counter())
        found["code"] += bool(CODE.search(text))
        found["path"] += bool(PATH.search(text))
        found["stack trace"] += bool(TRACE.search(text))
        found["JSON inside"] += bool(INNER_JSON.search(text))
        found["capped"] += TRUNCATION_MARK in content[CAPTURE_LIMIT - 5:]
        return kind

    def share(self, role: str) -> float:
        return self.roles[role] / self.messages if self.messages else 0.0

    def call_share(self, tool: str) -> float:
        total = sum(self.calls.values())
        return self.calls[tool] / total if total else 0.0

    def percentiles(self, key: str) -> dict[str, int]:
        ordered = sorted(self.lengths.get(key, []))
        return {"p10": _percentile(ordered, 0.1), "p50": _percentile(ordered, 0.5), "p90": _percentile(ordered, 0.9),
                "p99": _percentile(ordered, 0.99), "max": ordered[-1] if ordered else 0}

    def table(self) -> str:
        """The statistics as markdown tables (the module docstring holds one run of them)."""
        out = [f"{self.messages:,} messages in {len(self.sessions):,} sessions of {len(self.projects)} projects "
               f"({', '.join(f'{k} {v:,}' for k, v in sorted(self.sources.items()))}); session size p50 "
               f"{_percentile(sorted(self.sessions), 0.5)}, p90 {_percentile(sorted(self.sessions), 0.9)}, max "
               f"{max(self.sessions, default=0)}; "
               f"{(self.first or END):%Y-%m-%d} to {(self.last or END):%Y-%m-%d}", "",
               "| role | share | p10 | p50 | p90 | p99 | max |", "|---|---|---|---|---|---|---|"]
        for role in ("user", "assistant", "tool", "system"):
            p = self.percentiles(role)
            out.append(f"| {role} | {self.share(role) * 100:.1f}% | {p['p10']:,} | {p['p50']:,} | {p['p90']:,} | "
                       f"{p['p99']:,} | {p['max']:,} |")
        out += ["", "| tool message | share of calls | messages | p10 | p50 | p90 | p99 | max |",
                "|---|---|---|---|---|---|---|---|"]
        for tool, _ in self.calls.most_common():
            for block in ("call", "result", "hook"):
                key = f"{tool} {block}"
                if key in self.lengths:
                    p = self.percentiles(key)
                    share = f"{self.call_share(tool) * 100:.1f}%" if block != "result" else ""
                    out.append(f"| {key} | {share} | {len(self.lengths[key]) / self.messages * 100:.1f}% | "
                               f"{p['p10']:,} | {p['p50']:,} | {p['p90']:,} | {p['p99']:,} | {p['max']:,} |")
        names = ("code", "path", "stack trace", "JSON inside", "capped")
        out += ["", "| role | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for role in ("user", "assistant", "tool"):
            counts, total = self.features.get(role, Counter()), self.roles[role] or 1
            out.append(f"| {role} | " + " | ".join(f"{counts[n] / total * 100:.1f}%" for n in names) + " |")
        return "\n".join(out)


def describe(conversations: Iterable[Any]) -> Distribution:
    """The statistics of conversations as stored (role, content, metadata of each message: the
    tool and block come from the capture metadata and the JSON, not from generator labels)."""
    stats = Distribution()
    for conversation in conversations:
        pending: deque[str] = deque()
        stats.sessions.append(len(conversation.messages))
        metadata = conversation.metadata or {}
        stats.sources[str(metadata.get("source"))] += 1
        stats.projects[str(metadata.get("project") or metadata.get("cwd"))] += 1
        for message in conversation.messages:
            stats.add(message.role, message.content, message.metadata, pending)
        if conversation.messages:
            first, last = conversation.messages[0].created_at, conversation.messages[-1].created_at
            stats.first = min(stats.first or first, first)
            stats.last = max(stats.last or last, last)
    return stats


def describe_database(limit: int | None = None) -> Distribution:
    """The same statistics of the configured database's conversations (e.g. a real Winni with
    imported transcripts: how this generator's assumptions can be checked)."""
    from conversations.models import Conversation as Stored

    rows = Stored.objects.order_by("created_at").prefetch_related("messages")
    if limit:
        rows = rows[:limit]

    class View:
        def __init__(self, conversation: Any) -> None:
            self.metadata = conversation.metadata
            self.messages = sorted(conversation.messages.all(), key=lambda m: m.turn_number)

    return describe(View(c) for c in rows.iterator(chunk_size=200))


# --- for benchmarks -------------------------------------------------------------------------------

def load_realistic(*, conversations: int, messages: int, seed: int = 0, projects: int | None = None,
                   defer_indexes: bool | None = None, progress: bool = True, on_batch: Any = None,
                   with_projects: bool = False) -> LoadStats:
    """COPY a realistic corpus into the configured database (bench/corpus.py's copy_corpus);
    with_projects: each session written with its project (corpus_projects), as capture writes it."""
    corpus = RealisticCorpus(conversations=conversations, messages=messages, seed=seed, projects=projects)
    return copy_corpus(corpus, messages=messages, defer_indexes=defer_indexes, progress=progress, on_batch=on_batch,
                       projects=corpus_projects(corpus) if with_projects else None)


def corpus_projects(corpus: Any) -> dict[str, int]:
    """The realistic corpus' projects (one per corpus project, found by its folder: a PATH key, as
    the hooks' cwd names it), by name: its sessions and memories are written with them, as capture
    writes them (a project given to a million rows afterwards writes a new version of each into
    every index: a store no capture makes)."""
    from core import projects

    return {project.name: (projects.project_find(project.name)
                           or projects.project_create(name=project.name, path=project.root)).pk
            for project in corpus.projects}


def queries(corpus: RealisticCorpus, count: int, seed: int = 11) -> list[tuple[str, str]]:
    """(kind, query) pairs as an agent or a user searches its history: questions (facts),
    identifiers, file names and path parts, error messages, a few words."""
    return [(kind, text) for kind, text, _ in project_queries(corpus, count, seed)]


def project_queries(corpus: RealisticCorpus, count: int, seed: int = 11) -> list[tuple[str, str, Project]]:
    """`queries`, each with the project it is about (popular projects more often)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        project = corpus.projects[bisect.bisect_left(corpus.project_cdf, rng.random() * corpus.project_cdf[-1])]
        kind = rng.choice(["question", "identifier", "path", "error", "words"])
        if kind == "question":
            text = rng.choice(project.facts).question
        elif kind == "identifier":
            text = rng.choice(project.functions + project.classes)
        elif kind == "path":
            path = project.path(rng)
            text = rng.choice([path.rsplit("/", 1)[-1], "/".join(path.split("/")[-2:])])
        elif kind == "error":
            text = project.error(rng).splitlines()[0][:80]
        else:
            text = f"{rng.choice(project.nouns)} {rng.choice(project.attrs)} {rng.choice(['bug', 'test', 'slow', 'fix'])}"
        out.append((kind, text, project))
    return out


def memory_texts(corpus: RealisticCorpus, count: int, seed: int = 5) -> list[str]:
    """One-sentence memories an agent keeps about its projects (the facts, then variations)."""
    rng = random.Random(seed)
    out = list(dict.fromkeys(f"{fact.project}: {fact.statement}." for fact in corpus.facts[:count]))
    seen = set(out)
    while len(out) < count:
        project = rng.choice(corpus.projects)
        fact = rng.choice(project.facts)
        text = (f"{project.name}: {fact.statement.rsplit(' (', 1)[0]}; checked {rng.randint(1, 28)} "
                f"{rng.choice(['May', 'June', 'July', 'August', 'September', 'October'])} "
                f"({rng.choice(project.people)}, #{rng.randint(1, 99_999)}).")
        if text not in seen:  # memories are unique by content
            seen.add(text)
            out.append(text)
    return out


def search_terms(corpus: RealisticCorpus) -> dict[str, str]:
    """Terms of about known frequency for full-text benchmarks: a ticket id of the least worked-on
    project (in a handful of messages of a 1M corpus; maybe none of a small one), the name of the
    project nearest 1% of the sessions (in its paths), and `test` (in most messages)."""
    medium = min(corpus.projects, key=lambda p: abs(corpus.project_share(p) - 0.01))
    return {"rare": corpus.projects[-1].facts[0].ticket, "medium": medium.name, "common": "test"}


def sample_rows(corpus: RealisticCorpus, count: int) -> list[Message]:
    """The first `count` messages of the corpus, in conversation order."""
    out: list[Message] = []
    for conversation in corpus:
        out += conversation.messages
        if len(out) >= count:
            break
    return out[:count]


# --- command line ---------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--conversations", type=int, help="default: messages / 10")
    parser.add_argument("--projects", type=int, help="default: conversations / 500, within 20-200")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stats", action="store_true", help="print the distribution of the generated corpus")
    parser.add_argument("--load", action="store_true", help="COPY it into the database (WINNI_DATA_DIR / DATABASE_URL)")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="print the first N sessions")
    parser.add_argument("--describe-db", action="store_true", help="the statistics of the configured database")
    args = parser.parse_args()
    conversations = args.conversations or max(1, args.messages // 10)
    corpus = RealisticCorpus(conversations=conversations, messages=args.messages, seed=args.seed, projects=args.projects)
    if args.describe_db:
        import _django

        _django.setup("realistic")
        print(describe_database().table())
        return
    if args.show:
        for conversation, _ in zip(corpus, range(args.show)):
            print(f"=== {conversation.session_id} {json.dumps(conversation.metadata)}")
            for message in conversation.messages:
                print(f"--- #{message.turn_number} {message.role} {message.block} {message.tool or ''} "
                      f"{len(message.content):,} chars {message.created_at:%Y-%m-%d %H:%M:%S}")
                print(message.content[:1500] + (" …" if len(message.content) > 1500 else ""))
    if args.stats:
        started = time.perf_counter()
        stats = describe(corpus)
        seconds = time.perf_counter() - started
        print(stats.table())
        print(f"\ngenerated and measured in {seconds:.1f} s")
    if args.load:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import _django

        _django.setup("realistic")
        load_realistic(conversations=conversations, messages=args.messages, seed=args.seed, projects=args.projects)


if __name__ == "__main__":
    main()
