"""Whether the agent used what automatic recall injected (agents.use): the judge on
the labelled set (tests/data/injection_use.jsonl, written by bench/injection_use_data.py), its
rules one by one, and a real session through the capture endpoint: file recall injects two
memories, the agent edits the file one of them names, the next prompt closes the turn; the
transcript's note and the dashboard say what was used."""
from __future__ import annotations

import json

import pytest

from agents.models import Injection
from agents.use import Turn, item_ids, judge
from conversations.admin import transcript_url
from conversations.models import Conversation
from core.models import ItemUse
from memory import services as memories
from tests.support import ROOT

DATA = ROOT / "tests" / "data" / "injection_use.jsonl"
CWD = "/home/dev/shop"


def _judged(case: dict) -> bool:
    return judge(item_text=case["item"]["text"], ids=item_ids(case["item"]), prompt=case["prompt"],
                 following=[Turn(m["role"], m["content"]) for m in case["following"]], roots=[CWD], cwd=CWD)[0]


def test_the_judge_finds_used_items_with_precision_and_recall_of_at_least_0_8():
    cases = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    assert len(cases) >= 100 and {c["item"]["kind"] for c in cases} == {"memory", "decision", "invariant", "message"}
    said = [(case["used"], _judged(case)) for case in cases]
    tp = sum(truth and judged for truth, judged in said)
    precision = tp / sum(judged for _, judged in said)
    recall = tp / sum(truth for truth, _ in said)
    assert precision >= 0.8 and recall >= 0.8, (precision, recall)


def _tool(name: str, tool_input: dict, response: object = None) -> Turn:
    return Turn("tool", json.dumps({"tool_name": name, "tool_input": tool_input, "tool_response": response or {}}))


ITEM = "Tax rates are basis points (RATE_BASIS_POINTS = 2000) in src/billing/tax.py, never floats."


def test_what_counts_as_use_and_what_does_not():
    prompt = "Add the reduced rate for books in src/billing/vat.py."
    # A file the result of a Read shows the identifier in: the file holds it, the agent did not use it.
    echo = [_tool("Read", {"file_path": f"{CWD}/src/billing/vat.py"},
                  {"file": {"content": "from .tax import RATE_BASIS_POINTS"}}), Turn("assistant", "Done.")]
    assert judge(item_text=ITEM, ids=["m-123456789"], prompt=prompt, following=echo, roots=[CWD]) == (False, "")
    # The identifier in the agent's own edit is use.
    edit = [_tool("Edit", {"file_path": f"{CWD}/src/billing/vat.py", "new_string": "BOOKS = RATE_BASIS_POINTS // 4"})]
    assert judge(item_text=ITEM, ids=[], prompt=prompt, following=edit, roots=[CWD]) == (
        True, "repeated rate_basis_points")
    # Opening the file the item names is use, unless the prompt named it (the agent went there anyway).
    opened = [_tool("Read", {"file_path": f"{CWD}/src/billing/tax.py"})]
    assert judge(item_text=ITEM, ids=[], prompt=prompt, following=opened, roots=[CWD]) == (
        True, "opened or changed src/billing/tax.py")
    assert not judge(item_text=ITEM, ids=[], prompt="Look at src/billing/tax.py", following=opened, roots=[CWD])[0]
    # Fetching its source by id is use; the id in a tool's result is not.
    fetched = [_tool("mcp__winni__memory_history", {"memory_id": "9a4f6c1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b"})]
    assert judge(item_text=ITEM, ids=["9a4f6c1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b"], prompt=prompt, following=fetched)[0]
    assert not judge(item_text=ITEM, ids=["9a4f6c1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b"], prompt=prompt, following=[
        _tool("Grep", {"pattern": "x"}, {"content": "9a4f6c1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b"})])[0]
    # By the short name the block's line gives (core.shortref), as the agent reads it back.
    item = {"id": "9a4f6c1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b", "source": {"ref": "9a4f6c1e"}}
    short = [_tool("mcp__winni__winni_get", {"kind": "memory", "id": "9a4f6c1e"})]
    assert judge(item_text=ITEM, ids=item_ids(item), prompt=prompt, following=short)[0]
    # Common words shared with the item are not use; three of its rarer words are.
    assert not judge(item_text=ITEM, ids=[], prompt=prompt, following=[Turn("assistant", "The rates are fine now.")])[0]
    assert judge(item_text=ITEM, ids=[], prompt=prompt,
                 following=[Turn("assistant", "Stored as basis points like the other rates, floats never.")])[0]


@pytest.mark.django_db
def test_a_session_shows_which_injected_items_the_agent_used(api, tmp_path, admin_client,
                                                               django_capture_on_commit_callbacks):
    root = tmp_path / "shop"

    def post(**payload) -> dict:
        body = {"payload": {"session_id": "s-use", "cwd": str(root), "transcript_path": "", **payload},
                "agent": "claude", "repository": {"git_root": str(root)}, "git_branch": "main", "recall": True}
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/v1/capture/events", body, format="json")
        assert response.status_code in (200, 201), response.content
        return response.json()

    def tool(name: str, tool_input: dict) -> dict:
        return post(hook_event_name="PostToolUse", tool_name=name, tool_input=tool_input,
                    tool_response={"success": True})

    post(hook_event_name="UserPromptSubmit", prompt="The invoice total is off by a cent.")
    project = Conversation.objects.get(session_id="s-use").project
    used = memories.memory_store(content="src/invoice.py sums integer cents via sum_cents() in src/billing/money.py.",
                                 project=project.slug)[0]
    ignored = memories.memory_store(content="src/invoice.py was reviewed by Priya in March.", project=project.slug)[0]
    added = tool("Read", {"file_path": f"{root}/src/invoice.py"})["additional_context"]
    assert f"id {str(used.pk)[:8]}]" in added and f"id {str(ignored.pk)[:8]}]" in added  # named short (core.shortref)
    tool("Edit", {"file_path": f"{root}/src/billing/money.py", "old_string": "round(", "new_string": "("})
    post(hook_event_name="Stop", last_assistant_message="Fixed: the rounding now happens once.")
    injection = Injection.objects.get(session_id="s-use", trigger="file")
    page = admin_client.get(transcript_url(injection.message.conversation_id)).content.decode()
    # The turn is not over until the next prompt: nothing judged yet.
    assert "used 1 of 2" not in page and not ItemUse.objects.exists()
    post(hook_event_name="UserPromptSubmit", prompt="Thanks. Now the shipping labels.")
    page = admin_client.get(transcript_url(injection.message.conversation_id)).content.decode()
    assert "used 1 of 2: memory (opened or changed src/billing/money.py); ignored: memory" in page
    uses = {use.item_key: use.used for use in ItemUse.objects.all()}
    assert uses == {f"memory:{used.pk}": True, f"memory:{ignored.pk}": False}
    dashboard = admin_client.get("/admin/").content.decode()
    assert 'id="winni-item-use"' in dashboard
    assert f"<td>{project.slug}</td><td>memory</td><td>2</td><td>1</td><td>1</td>" in dashboard


# --- the use prior (agents.use.prior_for, agents.autorecall.by_prior) ------------------------------------


def _judged_before(key: str, project, terms: list[str], used: bool, times: int) -> None:
    for _ in range(times):
        ItemUse.objects.create(injection_id=ItemUse.objects.count() + 1, item_key=key, kind=key.split(":")[0],
                               project=project, used=used, terms=terms)


@pytest.mark.django_db
def test_the_use_prior_counts_judgments_for_similar_prompts_of_the_project_in_one_query(
        django_assert_num_queries):
    from agents import use
    from agents.use import prior_for
    from core import projects

    shop, garden = projects.project_create(name="shop"), projects.project_create(name="garden")
    _judged_before("memory:1", shop, ["invoic", "round", "cent"], used=False, times=3)
    _judged_before("memory:2", shop, ["invoic", "round"], used=True, times=2)
    _judged_before("memory:3", shop, ["invoic", "label"], used=False, times=5)  # one shared word: another question
    _judged_before("memory:4", garden, ["invoic", "round"], used=False, times=5)  # another project's sessions
    with django_assert_num_queries(1):
        prior = prior_for(keys=["memory:1", "memory:2", "memory:3", "memory:4", "memory:5"],
                          terms=["invoic", "round", "total"], project_id=shop.pk)
    strength = use.PRIOR_STRENGTH
    assert prior == {"memory:1": pytest.approx(1 - strength * 3 / 4), "memory:2": pytest.approx(1 + strength * 2 / 3)}
    assert prior_for(keys=["memory:1"], terms=[], project_id=shop.pk) == {}


@pytest.mark.django_db
def test_the_prior_reorders_what_the_gate_admitted_and_admits_nothing_else():
    from agents import autorecall

    def row(n: int, score: float, similarity: float) -> autorecall.Candidate:
        return autorecall.Candidate(kind="message", id=f"m{n}", text="t", source={"conversation_id": f"c{n}"},
                                    score=score, lexemes={"psycopg", "driver"}, overlap=0.8, similarity=similarity)

    found = autorecall.Candidates(terms=["psycopg", "driver"], weights={"psycopg": 1.0, "driver": 1.0},
                                  recalled=[row(1, 1.0, 0.5), row(2, 0.9, 0.5), row(3, 0.5, 0.5), row(4, 0.45, 0.1)])
    assert [c.id for c in autorecall.block_items(found)] == ["m1", "m2", "m3", "m4"]
    # Ignored again and again, m1 falls behind m2 (scores 10 % apart); m3, used, stays behind both
    # (half the score: the prior is mild).
    found.prior = {"message:m1": 0.82, "message:m3": 1.2, "message:m4": 1.2}
    assert [c.id for c in autorecall.block_items(found, prior=found.prior)] == ["m2", "m1", "m3", "m4"]
    assert [c.id for c in autorecall.block_items(found)] == ["m1", "m2", "m3", "m4"]
    # What the gate keeps out stays out: a score under the relative floor, whatever its use.
    found.recalled.append(row(5, 0.2, 0.5))
    found.prior["message:m5"] = 1.2
    assert "m5" not in [c.id for c in autorecall.block_items(found, prior=found.prior)]
    # The block holds what fits in recall's order, shown in the prior's: nothing moves in or out.
    for candidate, words in zip(found.recalled, ("alpha", "bravo", "charlie", "delta", "echo")):
        candidate.text = f"psycopg driver {words} " * 20
    budget = len(autorecall.HEADER) + 900
    plain = [i["id"] for i in autorecall._block(autorecall.block_items(found), found.weights, budget, {})["items"]]
    learnt = [i["id"] for i in autorecall._block(autorecall.block_items(found), found.weights, budget, {},
                                                 order=autorecall.prior_order(found))["items"]]
    assert plain[:2] == ["m1", "m2"] and "m4" not in plain
    assert sorted(learnt) == sorted(plain) and learnt[:2] == ["m2", "m1"]
