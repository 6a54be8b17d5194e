"""Supersession at scale: 1,000 stored facts, 300 of them later replaced by an update stored with
store_memory(supersedes=[old id]); then search_memory is asked about each updated fact and must
return the new version first and the superseded one not at all.

The facts are 100 components of a software shop × 10 attributes (port, owner, database, language,
deploy tool, region, chat channel, repository, dashboard, log retention), one sentence each, so
every query has 9 other facts about the same component and 99 about the same attribute to get
past. An update is written as people write them ("X moved from A to B", "X is now B", or a plain
new statement, in turn). Two queries per updated fact: the old statement as it was stored (someone
searching with what they remember), and a question about the attribute ("Which port does the
billing service listen on?"). Every query also runs with include_superseded (the old version must
then name its successor). Memories go through the service (memory.services), as REST and MCP do;
the vectors are computed with the embedding worker's own function.

    .venv/bin/python bench/supersession.py
    .venv/bin/python bench/supersession.py --facts 1000 --updates 300 --seed 7

Data dir: WINNI_DATA_DIR (default /tmp/winni-bench-supersession); its memories are replaced."""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, BENCH)
import _django  # noqa: E402

# bench/secrets.py would shadow the standard library's secrets module (Django and torch import it).
sys.path[:] = [entry for entry in sys.path if entry not in (BENCH, "")]

COMPONENTS = [
    "billing service", "search index", "login page", "nightly export", "payment webhook", "image resizer",
    "audit log", "rate limiter", "email queue", "feature flag service", "mobile backend", "staging cluster",
    "metrics pipeline", "user profile service", "CSV importer", "notification service", "report generator",
    "invoice renderer", "SSO bridge", "data warehouse loader", "GraphQL gateway", "cron runner", "cache layer",
    "kafka consumer", "onboarding flow", "admin panel", "plugin host", "translation service", "build pipeline",
    "load balancer config", "DNS manager", "certificate manager", "backup job", "session store", "websocket server",
    "recommendation model", "analytics dashboard", "mail template service", "permissions service", "API gateway",
    "order service", "inventory service", "shipping calculator", "tax service", "pricing engine", "coupon service",
    "review service", "chat support widget", "status page", "webhook dispatcher", "PDF exporter", "thumbnail worker",
    "geo lookup service", "fraud scorer", "ledger service", "payout scheduler", "KYC checker", "document store",
    "full-text indexer", "event bus", "schema registry", "config service", "secrets broker", "job scheduler",
    "video transcoder", "audio normaliser", "upload service", "antivirus scanner", "link shortener", "QR generator",
    "calendar sync", "contacts importer", "CRM connector", "ERP bridge", "survey service", "A/B test service",
    "telemetry collector", "crash reporter", "license server", "update server", "docs site", "blog engine",
    "forum service", "wiki backend", "ticketing integration", "on-call bot", "deploy bot", "changelog generator",
    "dependency scanner", "code search", "test runner farm", "artifact cache", "package mirror", "VPN gateway",
    "bastion host", "LDAP sync", "SCIM endpoint", "billing dashboard", "partner API", "public API",
]
TEAMS = ["Alice", "Bob", "Carol", "Dmitri", "Esra", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena",
         "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tomoko"]
DATABASES = ["PostgreSQL", "MySQL", "MongoDB", "Cassandra", "SQLite", "DynamoDB", "Redis", "CockroachDB", "ClickHouse"]
LANGUAGES = ["Python", "Go", "Rust", "Java", "Kotlin", "TypeScript", "Elixir", "Ruby", "C#", "Scala"]
DEPLOY = ["Ansible", "Helm", "Terraform", "Fabric", "Capistrano", "Argo CD", "Nomad", "plain SSH scripts", "Pulumi"]
REGIONS = ["eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-southeast-1", "ap-northeast-1", "sa-east-1"]
DASHBOARDS = ["Grafana", "Kibana", "Datadog", "New Relic", "Honeycomb", "Metabase", "Superset"]

# attribute → (values, statement, question, update phrasings using {old} and {new})
ATTRIBUTES = {
    "port": (lambda r: str(r.randrange(2000, 9999)), "The {c} listens on port {v}.",
             "Which port does the {c} listen on?"),
    "owner": (lambda r: r.choice(TEAMS), "{v} owns the {c}.", "Who owns the {c}?"),
    "database": (lambda r: r.choice(DATABASES), "The {c} stores its data in {v}.", "Which database does the {c} use?"),
    "language": (lambda r: r.choice(LANGUAGES), "The {c} is written in {v}.", "What language is the {c} written in?"),
    "deploy": (lambda r: r.choice(DEPLOY), "The {c} is deployed with {v}.", "How is the {c} deployed?"),
    "region": (lambda r: r.choice(REGIONS), "The {c} runs in the {v} region.", "Which region does the {c} run in?"),
    "channel": (lambda r: "#" + r.choice(["ops", "alerts", "team", "dev", "oncall", "support"]) + "-" + str(r.randrange(1, 99)),
                "Alerts for the {c} go to the {v} channel.", "Where do alerts for the {c} go?"),
    "repository": (lambda r: f"git.example.com/{r.choice(['core', 'platform', 'apps', 'infra'])}/{r.randrange(100, 999)}",
                   "The code of the {c} lives in {v}.", "Where is the code of the {c}?"),
    "dashboard": (lambda r: r.choice(DASHBOARDS), "The {c} dashboard is in {v}.", "Where is the dashboard of the {c}?"),
    "retention": (lambda r: f"{r.choice([7, 14, 30, 60, 90, 180, 365])} days",
                  "Logs of the {c} are kept for {v}.", "How long are logs of the {c} kept?"),
}
UPDATES = [
    "The {c} moved: {new_statement_lower} It used to be {old}.",
    "Update: {new_statement}",
    "{new_statement}",
]


def facts(count: int, rng: random.Random) -> list[dict[str, str]]:
    pairs = [(component, attribute) for component in COMPONENTS for attribute in ATTRIBUTES]
    rng.shuffle(pairs)
    out = []
    for component, attribute in pairs[:count]:
        value, statement, question = ATTRIBUTES[attribute]
        v = value(rng)
        out.append({"component": component, "attribute": attribute, "value": v,
                    "text": statement.format(c=component, v=v), "question": question.format(c=component)})
    return out


def update_of(fact: dict[str, str], index: int, rng: random.Random) -> str:
    value, statement, _ = ATTRIBUTES[fact["attribute"]]
    new = value(rng)
    while new == fact["value"]:
        new = value(rng)
    new_statement = statement.format(c=fact["component"], v=new)
    return UPDATES[index % len(UPDATES)].format(c=fact["component"], old=fact["value"], new_statement=new_statement,
                                                new_statement_lower=new_statement[0].lower() + new_statement[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    _django.setup("supersession")
    from tqdm import tqdm

    from memory import embeddings, services
    from memory.models import Embedding, Memory

    rng = random.Random(args.seed)
    Embedding.objects.filter(kind="memory").delete()
    Memory.objects.all().delete()
    stored = facts(args.facts, rng)
    for fact in tqdm(stored, desc="storing facts", unit="fact"):
        fact["id"] = services.memory_store(content=fact["text"], tags=["fact"])[0].pk
    _django.embed_pending("memory")
    updated = rng.sample(stored, args.updates)
    # Before any update: how often is the fact itself first for the same queries? What a search
    # misses here is ranking, not supersession.
    before = {label: sum(services.memory_search(query=fact[key], limit=5)[:1] and
                         services.memory_search(query=fact[key], limit=1)[0].memory.pk == fact["id"]
                         for fact in updated)
              for label, key in (("old statement", "text"), ("question", "question"))}
    for index, fact in enumerate(tqdm(updated, desc="storing updates", unit="update")):
        fact["update"] = update_of(fact, index, rng)
        memory, created = services.memory_store(content=fact["update"], tags=["fact"], supersedes=[str(fact["id"])])
        assert created
        fact["new_id"] = memory.pk
    _django.embed_pending("memory")
    print(f"model {embeddings.model_name()}; {Memory.objects.count()} memories, "
          f"{Memory.objects.filter(superseded_by__isnull=False).count()} superseded")

    results: dict[str, dict[str, int]] = {}
    latencies: list[float] = []
    failures: list[str] = []
    for label, key in (("old statement", "text"), ("question", "question")):
        counts = {"new first": 0, "new in top 5": 0, "old absent": 0, "old names successor": 0}
        for fact in tqdm(updated, desc=f"queries ({label})", unit="query"):
            started = time.perf_counter()
            hits = services.memory_search(query=fact[key], limit=5)
            latencies.append((time.perf_counter() - started) * 1000)
            ids = [hit.memory.pk for hit in hits]
            counts["new first"] += ids[:1] == [fact["new_id"]]
            counts["new in top 5"] += fact["new_id"] in ids
            counts["old absent"] += fact["id"] not in ids
            if ids[:1] != [fact["new_id"]] and len(failures) < 5:
                failures.append(f"  {label}: {fact[key]!r} → first {hits[0].memory.content if hits else None!r} "
                                f"(update {fact['update']!r})")
            wide = services.memory_search(query=fact[key], limit=20, include_superseded=True)
            counts["old names successor"] += any(
                hit.memory.pk == fact["id"] and hit.memory.superseded_by_id == fact["new_id"] for hit in wide)
        results[label] = counts
    total = len(updated)
    print(f"\n{total} updated facts; search_memory limit 5 (the default), superseded left out")
    print(f"{'query':<14} {'new first':>10} {'new in top 5':>13} {'old absent':>11} {'old names successor*':>21}"
          f" {'before updates: fact first':>27}")
    for label, counts in results.items():
        print(f"{label:<14} " + " ".join(f"{100 * counts[name] / total:>{width}.1f}%" for name, width in (
            ("new first", 9), ("new in top 5", 12), ("old absent", 10), ("old names successor", 20)))
            + f" {100 * before[label] / total:>26.1f}%")
    print("* with include_superseded, limit 20: the old version is listed and names its successor")
    p50, p95 = _django.percentiles(latencies)
    print(f"search_memory latency (service, one process): p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
          f"{len(latencies) / (sum(latencies) / 1000):.0f} searches/s")
    if failures:
        print("first misses:\n" + "\n".join(failures))


if __name__ == "__main__":
    main()
