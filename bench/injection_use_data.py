"""Writes tests/data/injection_use.jsonl: a labelled set of injected items and the turns that
followed them, for bench/injection_use.py (does the agent use what Winni injected?).

Each case is one item of a block automatic recall added to a prompt (its kind, id, the line the
agent read), the prompt, and the messages of the turn that followed, shaped as capture stores them
from the recorded Claude Code traffic (tests/data/traffic/claude-2.1.197): assistant replies, and
tool messages `{"tool_name", "tool_input", "tool_response"}` for Read, Edit, Write, Bash, Grep and
Winni's own MCP tools (`mcp__winni__…`). The label says whether the agent used the item, decided
by what the scenario is, not by the judge:

used
- identifier: the reply or an edit carries the item's identifier (a constant, a setting, a value);
- file: the agent opens or edits the file the item named (the prompt did not name it);
- fetch: the agent asks Winni for the item's source by id (dewey_get_conversation, medallion_get,
  memory_history);
- paraphrase: the reply restates the item in its own words, sharing several of its rarer words;
- paraphrase-hard (in about half the domains): the agent acts on the item but says it in other
  words and touches nothing it names: a judge that reads words and files cannot see it.
ignored
- unrelated: the agent works on something else;
- prompt-file: the item names the file the prompt asked about, which the agent edits anyway;
- echo: a Read's result shows the item's identifier (the file holds it), the agent does not use it;
- generic: the reply shares only common words with the item;
- coincidence (in about half the domains): the agent opens the file the item names for a reason of
  its own (grepping across the code base): looks like use, is not.

    .venv/bin/python bench/injection_use_data.py   # rewrites the file (seeded: the same each time)"""
from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "injection_use.jsonl"
CWD = "/home/dev/shop"

# One domain of the shop's code: what an injected item says and what an agent does with it.
DOMAINS = [
    {"topic": "invoice rounding", "prompt": "The invoice total is off by a cent for some orders, can you look?",
     "item": "Invoice totals are summed in integer cents and rounded once with ROUND_HALF_EVEN in src/billing/money.py.",
     "ident": "ROUND_HALF_EVEN", "file": "src/billing/money.py", "prompt_file": "src/invoice.py",
     "reply": "The per-line rounding was the bug. I switched it to sum integer cents and round once with ROUND_HALF_EVEN.",
     "paraphrase": "Totals should be summed in integer cents and rounded once at the end, so I removed the per-line rounding.",
     "hard": "I moved the conversion to the very end, after adding everything up; the one-cent drift is gone.",
     "other": ("src/shipping/labels.py", "Fixed the label printer's margin; unrelated to totals but it was broken.")},
    {"topic": "tax module", "prompt": "Add the reduced VAT rate for books to the tax calculation.",
     "item": "Tax rates are stored as basis points (RATE_BASIS_POINTS = 2000 for 20 %) in src/billing/tax.py, never as floats.",
     "ident": "RATE_BASIS_POINTS", "file": "src/billing/tax.py", "prompt_file": "src/billing/vat.py",
     "reply": "Added BOOKS_RATE_BASIS_POINTS = 550 next to RATE_BASIS_POINTS, so the reduced rate stays an integer.",
     "paraphrase": "I stored the reduced rate as basis points like the others, never floats, so 5.5 % is 550.",
     "hard": "The new books rate follows the existing integer convention for percentages.",
     "other": ("src/catalog/search.py", "Added the books category filter to the catalogue search.")},
    {"topic": "session timeout", "prompt": "Users get logged out too early on the admin pages, why?",
     "item": "Admin sessions expire after SESSION_IDLE_SECONDS = 900, set in config/auth.toml, on purpose (security review).",
     "ident": "SESSION_IDLE_SECONDS", "file": "config/auth.toml", "prompt_file": "src/admin/views.py",
     "reply": "That is by design: SESSION_IDLE_SECONDS is 900 after the security review, so 15 minutes idle logs you out.",
     "paraphrase": "The early logout is intended: the security review shortened idle admin sessions, so they expire quickly.",
     "hard": "This was a deliberate choice from last quarter's audit; I would not lengthen it without asking them.",
     "other": ("src/admin/templates/base.html", "Fixed the admin header layout while I was there.")},
    {"topic": "rate limiter", "prompt": "The public API returns 429 for our own health checks, can you fix it?",
     "item": "The rate limiter exempts internal callers by the X-Internal-Token header, checked in src/api/throttle.py.",
     "ident": "X-Internal-Token", "file": "src/api/throttle.py", "prompt_file": "src/api/health.py",
     "reply": "The health checker did not send X-Internal-Token, so the limiter counted it. I added the header to the checker.",
     "paraphrase": "Internal callers are exempted from the limiter by a header token; the health checker was missing it.",
     "hard": "Our monitoring probe simply was not identifying itself as one of us, so it got throttled like a stranger.",
     "other": ("src/api/pagination.py", "Cleaned up the cursor pagination helper; the 429 is a separate matter.")},
    {"topic": "search index", "prompt": "Search results are missing products added today.",
     "item": "The product index is rebuilt nightly by reindex_products in src/search/tasks.py; new products wait until then.",
     "ident": "reindex_products", "file": "src/search/tasks.py", "prompt_file": "src/search/views.py",
     "reply": "New products wait for the nightly reindex_products run. I added an index update on product save.",
     "paraphrase": "The product index is only rebuilt nightly, so products added today wait until the rebuild.",
     "hard": "Fresh items only show up after the overnight batch; I made saving a product push it right away.",
     "other": ("src/search/synonyms.txt", "Added synonyms for 'sofa' and 'couch' to the search dictionary.")},
    {"topic": "CSV export", "prompt": "Excel shows garbled characters in the orders export.",
     "item": "The orders CSV export writes UTF-8 with a BOM (encoding='utf-8-sig') in src/reports/export.py for Excel.",
     "ident": "utf-8-sig", "file": "src/reports/export.py", "prompt_file": "src/reports/orders.py",
     "reply": "The orders export lost its BOM: it must be written with utf-8-sig for Excel. Restored it.",
     "paraphrase": "Excel needs the byte order mark, so the export must write UTF-8 with a BOM; someone dropped it.",
     "hard": "Excel guesses the legacy code page without that invisible marker at the start, so I put it back.",
     "other": ("src/reports/charts.py", "Fixed the chart colours in the monthly report.")},
    {"topic": "email retry", "prompt": "Order confirmation emails are sometimes sent twice.",
     "item": "Email sending retries with an idempotency key (send_once_key) stored in src/notify/outbox.py to avoid duplicates.",
     "ident": "send_once_key", "file": "src/notify/outbox.py", "prompt_file": "src/notify/emails.py",
     "reply": "The confirmation path bypassed the outbox, so send_once_key was never checked. It now goes through it.",
     "paraphrase": "Retries must carry the idempotency key stored in the outbox, or duplicates slip through; the path skipped it.",
     "hard": "The confirmation was fired directly instead of through our deduplicating queue; I routed it properly.",
     "other": ("src/notify/templates/welcome.html", "Updated the welcome email's footer links.")},
    {"topic": "cache key", "prompt": "Prices shown in the cart are stale after a price change.",
     "item": "Price cache keys include the price list version (price:v{version}:{sku}) built in src/pricing/cache.py.",
     "ident": "price:v{version}:{sku}", "file": "src/pricing/cache.py", "prompt_file": "src/cart/views.py",
     "reply": "The cart built its own key without the version; I switched it to price:v{version}:{sku} from the pricing cache.",
     "paraphrase": "Cached prices are keyed by the price list version, and the cart ignored the version when reading them.",
     "hard": "The cart read from a slot that never moves when prices are republished; now it follows the published edition.",
     "other": ("src/cart/coupons.py", "Tidied the coupon validation messages.")},
    {"topic": "migrations", "prompt": "The deploy failed on the orders migration, what happened?",
     "item": "Large tables are migrated with SeparateDatabaseAndState and a concurrent index (atomic = False), see migrations/README.md.",
     "ident": "SeparateDatabaseAndState", "file": "migrations/README.md", "prompt_file": "src/orders/migrations/0042_total.py",
     "reply": "The migration added an index inside a transaction on the big table. I split it with SeparateDatabaseAndState and atomic = False.",
     "paraphrase": "Large tables need the concurrent index outside a transaction, as the migrations guide says; this one did it inline.",
     "hard": "On a table that size the index has to be built without locking writes; I restructured the step accordingly.",
     "other": ("src/orders/admin.py", "Added the order total column to the admin list.")},
    {"topic": "date formatting", "prompt": "Dates in the order history show the wrong day for customers in Asia.",
     "item": "Dates are stored in UTC and shown with formatDateLocal() in web/src/lib/dates.ts, never toISOString().slice(0, 10).",
     "ident": "formatDateLocal", "file": "web/src/lib/dates.ts", "prompt_file": "web/src/pages/OrderHistory.tsx",
     "reply": "OrderHistory sliced toISOString(); I replaced it with formatDateLocal() so the day follows the customer's zone.",
     "paraphrase": "Dates are stored in UTC and must be shown in local time; the page sliced the UTC string instead.",
     "hard": "The page printed the server's calendar day instead of the viewer's; it now converts before printing.",
     "other": ("web/src/pages/Checkout.tsx", "Fixed a typo in the checkout button label.")},
    {"topic": "CI workflow", "prompt": "CI takes 40 minutes now, can we speed it up?",
     "item": "CI caches pip wheels keyed on requirements-lock.txt in .github/workflows/ci.yml; the key broke when the file was renamed.",
     "ident": "requirements-lock.txt", "file": ".github/workflows/ci.yml", "prompt_file": "Makefile",
     "reply": "The cache key still pointed at requirements-lock.txt, which was renamed, so nothing was cached. Fixed the key.",
     "paraphrase": "The wheel cache is keyed on the lock file, and the rename broke the key; every run rebuilt everything.",
     "hard": "Nothing was being reused between runs since the dependency file moved; I pointed the reuse at the new one.",
     "other": ("docs/CONTRIBUTING.md", "Documented how to run the fast test subset locally.")},
    {"topic": "logging", "prompt": "Our logs are flooded with health check lines.",
     "item": "Health check requests are dropped from the access log by the HealthcheckFilter in src/app/logging.py.",
     "ident": "HealthcheckFilter", "file": "src/app/logging.py", "prompt_file": "config/logging.yaml",
     "reply": "The new route /healthz/ready was not matched by HealthcheckFilter; I extended its pattern.",
     "paraphrase": "Health check requests should be dropped from the access log by the filter; the new route escaped it.",
     "hard": "The readiness probe's path was new, so our noise suppression did not recognise it; it does now.",
     "other": ("src/app/metrics.py", "Added a request duration histogram.")},
]

KINDS = ["memory", "decision", "message", "memory", "invariant", "memory"]


def tool(name: str, tool_input: dict, response: object = None) -> dict:
    return {"role": "tool", "content": json.dumps({"tool_name": name, "tool_input": tool_input,
                                                   "tool_response": response if response is not None else {}})}


def say(text: str) -> dict:
    return {"role": "assistant", "content": text}


def read(path: str, content: str = "") -> dict:
    return tool("Read", {"file_path": f"{CWD}/{path}"},
                {"type": "text", "file": {"filePath": f"{CWD}/{path}", "content": content or f"# {path}\n"}})


def edit(path: str, old: str, new: str) -> dict:
    return tool("Edit", {"file_path": f"{CWD}/{path}", "old_string": old, "new_string": new, "replace_all": False},
                {"filePath": f"{CWD}/{path}", "oldString": old, "newString": new})


def item_of(domain: dict, kind: str, rng: random.Random) -> dict:
    medallion, conversation = str(uuid.UUID(int=rng.getrandbits(128))), str(uuid.UUID(int=rng.getrandbits(128)))
    own = str(uuid.UUID(int=rng.getrandbits(128)))
    if kind in ("decision", "invariant"):
        item_id = f"{medallion}:{'D-' + str(rng.randint(1, 30)) if kind == 'decision' else 'inv-' + own[:10]}"
        source = {"kind": kind, "id": item_id, "medallion_id": medallion, "date": "2026-11-12"}
        text = f"{'Decision' if kind == 'decision' else 'Invariant'}: {domain['item']}"
    elif kind == "message":
        item_id = own
        source = {"kind": "message", "id": own, "conversation_id": conversation, "session_id": "a1b2c3",
                  "turn": rng.randint(3, 60), "role": "assistant", "date": "2026-11-10"}
        text = domain["item"]
    else:
        item_id = own
        source = {"kind": "memory", "id": own, "date": "2026-11-05"}
        text = domain["item"]
    return {"kind": kind, "id": item_id, "text": text, "source": source}


def fetch_call(item: dict) -> dict:
    source = item["source"]
    if item["kind"] == "message":
        return tool("mcp__winni__dewey_get_conversation", {"conversation_id": source["conversation_id"]},
                    {"messages": [{"turn": source["turn"], "content": item["text"]}]})
    if item["kind"] in ("decision", "invariant"):
        return tool("mcp__winni__medallion_get", {"medallion_id": source["medallion_id"]}, {"decisions": []})
    return tool("mcp__winni__memory_history", {"memory_id": item["id"]}, {"versions": [{"content": item["text"]}]})


def cases_of(domain: dict, index: int, rng: random.Random) -> list[dict]:
    d = domain
    other_file, other_reply = d["other"]
    scenarios: list[tuple[str, bool, str, list[dict]]] = [
        ("identifier", True, d["prompt"], [read(d["prompt_file"]), edit(d["prompt_file"], "old", d["ident"]),
                                           say(d["reply"])]),
        ("file", True, d["prompt"], [read(d["prompt_file"]), read(d["file"]), edit(d["file"], "a", "b"),
                                     say("Done, see the diff.")]),
        ("fetch", True, d["prompt"], [None, read(d["prompt_file"]), say("Fixed as that earlier session did.")]),
        ("paraphrase", True, d["prompt"], [read(d["prompt_file"]), edit(d["prompt_file"], "x", "y"),
                                           say(d["paraphrase"])]),
        ("unrelated", False, d["prompt"], [read(other_file), edit(other_file, "a", "b"), say(other_reply)]),
        ("unrelated", False, f"Different question: {DOMAINS[(index + 3) % len(DOMAINS)]['prompt']}",
         [read(DOMAINS[(index + 3) % len(DOMAINS)]["prompt_file"]), say(DOMAINS[(index + 3) % len(DOMAINS)]["hard"])]),
        ("prompt-file", False, f"{d['prompt']} It is in {d['file']}.",
         [read(d["file"]), edit(d["file"], "a", "b"), say("Fixed a typo in the error message there; that was it.")]),
        ("echo", False, d["prompt"], [read(d["prompt_file"], content=f"from .base import {d['ident']}\n\n# …\n"),
                                      edit(d["prompt_file"], "a", "b"), say(other_reply)]),
        ("generic", False, d["prompt"], [read(d["prompt_file"]), say("I checked the function and the tests pass now; "
                                                                     "the change was small and safe.")]),
    ]
    if rng.random() < 0.5:
        scenarios.append(("paraphrase-hard", True, d["prompt"], [read(d["prompt_file"]),
                                                                 edit(d["prompt_file"], "p", "q"), say(d["hard"])]))
    if rng.random() < 0.5:
        scenarios.append(("coincidence", False, d["prompt"], [
            tool("Grep", {"pattern": "TODO", "path": f"{CWD}/src"}, {"numFiles": 9}), read(d["file"]),
            read(other_file), edit(other_file, "a", "b"), say(other_reply)]))
    cases = []
    for number, (how, used, prompt, following) in enumerate(scenarios):
        item = item_of(d, KINDS[(index + number) % len(KINDS)], rng)
        following = [fetch_call(item) if step is None else step for step in following]
        cases.append({"case": f"{index:02d}-{number:02d}-{how}", "domain": d["topic"], "how": how, "used": used,
                      "prompt": prompt, "item": item, "following": following})
    return cases


def main() -> None:
    rng = random.Random(48)
    cases = [case for index, domain in enumerate(DOMAINS) for case in cases_of(domain, index, rng)]
    OUT.write_text("".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases), encoding="utf-8")
    used = sum(case["used"] for case in cases)
    print(f"{len(cases)} cases ({used} used, {len(cases) - used} ignored) → {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
