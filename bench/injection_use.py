"""Does the agent use what automatic recall injected? agents.use.judge over the
labelled set tests/data/injection_use.jsonl (bench/injection_use_data.py says how it was made and
what each scenario is): precision and recall of "used", overall, per item kind and per scenario,
and the cases it gets wrong. No database: the judge reads the injected line, the prompt and the
turn that followed.

    .venv/bin/python bench/injection_use.py"""
from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "injection_use.jsonl"
CWD = "/home/dev/shop"


def cases() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged(case: dict) -> tuple[bool, str]:
    from agents.use import Turn, item_ids, judge

    return judge(item_text=case["item"]["text"], ids=item_ids(case["item"]), prompt=case["prompt"],
                 following=[Turn(m["role"], m["content"]) for m in case["following"]], roots=[CWD], cwd=CWD)


def scores(rows: list[tuple[bool, bool]]) -> dict:
    tp = sum(1 for truth, said in rows if truth and said)
    fp = sum(1 for truth, said in rows if not truth and said)
    fn = sum(1 for truth, said in rows if truth and not said)
    return {"cases": len(rows), "used": sum(t for t, _ in rows),
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None,
            "accuracy": round(sum(t == s for t, s in rows) / len(rows), 3) if rows else None}


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
    import django

    django.setup()
    rows, by_kind, by_how, wrong = [], defaultdict(list), defaultdict(list), []
    for case in cases():
        said, evidence = judged(case)
        rows.append((case["used"], said))
        by_kind[case["item"]["kind"]].append((case["used"], said))
        by_how[case["how"]].append((case["used"], said))
        if said != case["used"]:
            wrong.append({"case": case["case"], "label": case["used"], "judged": said, "evidence": evidence})
    print(json.dumps({"overall": scores(rows), "by_kind": {k: scores(v) for k, v in sorted(by_kind.items())},
                      "by_scenario": {k: f"{sum(t == s for t, s in v)}/{len(v)} right" for k, v in sorted(by_how.items())},
                      "wrong": wrong}, indent=2))


if __name__ == "__main__":
    main()
