"""What the messages of bench/realistic.py say: projects (names, languages, file trees, identifiers,
recurring errors, facts) and the texts of prompts, replies and tool calls built from them. The
shapes follow Claude Code 2.x (tool names, inputs, outputs as its transcripts and PostToolUse hooks
carry them); the numbers that size them are in bench/realistic.py's docstring.

Every builder draws from the `random.Random` it is given, so one seed gives one corpus."""
from __future__ import annotations

import math
import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

# --- vocabulary ------------------------------------------------------------------------------

PROJECT_FIRST = """harbor quill ember atlas juniper cobalt lumen orbit sable tundra willow zephyr nimbus pylon
vesper fathom garnet kestrel marlin onyx prism rivet sierra talon umber vertex wren yarrow alder beacon
cinder delta falcon glacier hollow iris jasper kite lantern meadow""".split()
PROJECT_SECOND = """ledger api web cli sync core worker dash bot gateway search pipeline infra mobile docs sdk
engine hub relay notes""".split()
NOUNS = """invoice payment ledger tenant account order shipment cart customer session token report schedule
job queue webhook event metric alert document upload thumbnail search index embedding cache config
feature flag audit permission role team workspace comment thread message notification email
subscription plan coupon refund tax currency rate price inventory warehouse sensor reading device
firmware batch pipeline dataset prediction experiment artifact build deploy release migration backup
snapshot tile route trip driver vehicle booking slot calendar profile avatar organization contract
quote receipt transfer""".split()
VERBS = """get create update delete sync reconcile validate parse render fetch load save publish dispatch
retry schedule compute normalize resolve merge export import refresh expire archive notify ingest score
rank filter group flush encode decode serialize migrate backfill verify authorize""".split()
ADJECTIVES = """pending active stale partial default remote local cached primary legacy bulk daily weekly
internal public raw signed draft failed""".split()
KINDS_PY = ["service", "models", "views", "api", "tasks", "utils", "schemas", "repository", "client",
            "handlers", "serializers", "forms", "admin", "signals", "commands"]
KINDS_TS = ["Service", "Store", "Api", "Client", "Utils", "Types", "Hooks", "Context", "Router", "Schema"]
KINDS_GO = ["service", "handler", "store", "client", "types", "middleware", "worker", "config"]
KINDS_RS = ["service", "store", "client", "types", "handler", "config", "error", "worker"]
PEOPLE = """Alice Bilal Chen Dana Elif Farid Grace Hugo Ines Jonas Kai Lena Mateo Nora Omar Priya Quentin
Rosa Sven Tomas Uma Viktor Wei Yusuf Zoe""".split()
USERS = ["dev", "alice", "sam", "mk", "jordan", "rpatel", "lchen", "ubuntu"]
HOME_DIRS = ["src", "code", "work", "projects", "repos"]
DEPENDENCIES = {
    "python": ["django", "fastapi", "pydantic", "sqlalchemy", "celery", "redis", "httpx", "pytest", "alembic",
               "psycopg", "boto3", "numpy", "pandas", "structlog", "uvicorn"],
    "typescript": ["react", "next", "zod", "prisma", "express", "vitest", "jest", "axios", "tailwindcss",
                   "typescript", "eslint", "vite", "trpc", "redux", "date-fns"],
    "go": ["chi", "pgx", "zap", "cobra", "viper", "testify", "grpc", "sqlc", "redis/go-redis", "otel"],
    "rust": ["tokio", "serde", "axum", "sqlx", "anyhow", "thiserror", "tracing", "reqwest", "clap", "uuid"],
}
EXTENSIONS = {"python": "py", "typescript": "ts", "go": "go", "rust": "rs"}
FENCE = {"python": "python", "typescript": "ts", "go": "go", "rust": "rust"}
LANGUAGE_WEIGHTS = {"python": 0.45, "typescript": 0.35, "go": 0.12, "rust": 0.08}
DOC_SITES = ["docs.djangoproject.com/en/5.2/ref/models/querysets/", "www.postgresql.org/docs/current/gin.html",
             "docs.python.org/3/library/asyncio-task.html", "react.dev/reference/react/useEffect",
             "nextjs.org/docs/app/building-your-application/routing", "pkg.go.dev/context",
             "docs.rs/tokio/latest/tokio/sync/struct.Mutex.html", "github.com/pgvector/pgvector",
             "docs.celeryq.dev/en/stable/userguide/tasks.html", "fastapi.tiangolo.com/tutorial/dependencies/",
             "www.prisma.io/docs/orm/prisma-client/queries/transactions", "vitest.dev/guide/mocking",
             "docs.pydantic.dev/latest/concepts/validators/", "redis.io/docs/latest/commands/xadd/"]

# Errors any project meets; each project adds its own (PROJECT_ERRORS) built from its identifiers.
COMMON_ERRORS = [
    "ModuleNotFoundError: No module named '{dep}'",
    "TypeError: 'NoneType' object is not subscriptable",
    "psycopg.OperationalError: connection failed: connection to server at \"127.0.0.1\", port 5432 failed: Connection refused",
    "Error: connect ECONNREFUSED 127.0.0.1:6379",
    "fatal: not a git repository (or any of the parent directories): .git",
    "error: failed to push some refs to 'origin'",
    "npm ERR! code ERESOLVE",
    "OSError: [Errno 98] Address already in use",
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    "RuntimeError: Event loop is closed",
    "PermissionError: [Errno 13] Permission denied: '/var/lib/{name}/data'",
    "TimeoutError: timed out after 30.0 seconds",
    "FAILED: database is locked",
    "error[E0502]: cannot borrow `self` as mutable because it is also borrowed as immutable",
    "panic: runtime error: invalid memory address or nil pointer dereference",
    "SyntaxError: Unexpected token '<', \"<!DOCTYPE \" is not valid JSON",
]
PROJECT_ERRORS = {
    "python": [
        "AttributeError: 'NoneType' object has no attribute '{attr}'",
        "KeyError: '{key}'",
        "django.db.utils.IntegrityError: duplicate key value violates unique constraint \"{table}_{attr}_key\"",
        "ValueError: invalid literal for int() with base 10: '{attr}'",
        "AssertionError: assert {n} == {m}",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for {Cls}",
        "sqlalchemy.exc.ProgrammingError: (psycopg.errors.UndefinedColumn) column {table}.{attr} does not exist",
        "ImportError: cannot import name '{Cls}' from partially initialized module '{pkg}.{mod}'",
    ],
    "typescript": [
        "TypeError: Cannot read properties of undefined (reading '{attr}')",
        "error TS2339: Property '{attr}' does not exist on type '{Cls}'.",
        "error TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'.",
        "ReferenceError: {fn} is not defined",
        "Error: Hydration failed because the initial UI does not match what was rendered on the server.",
        "PrismaClientKnownRequestError: Unique constraint failed on the fields: (`{attr}`)",
    ],
    "go": [
        "panic: assignment to entry in nil map",
        "undefined: {Cls}",
        "cannot use {attr} (variable of type string) as int value in argument to {fn}",
        "ERROR: duplicate key value violates unique constraint \"{table}_pkey\" (SQLSTATE 23505)",
        "--- FAIL: Test{Cls} ({n}.{m}s)",
    ],
    "rust": [
        "error[E0425]: cannot find value `{attr}` in this scope",
        "error[E0308]: mismatched types",
        "thread 'main' panicked at src/{mod}.rs:{n}:{m}:\ncalled `Option::unwrap()` on a `None` value",
        "error[E0599]: no method named `{fn}` found for struct `{Cls}` in the current scope",
    ],
}
# Facts a project's sessions state and later ask about: (question, statement); each gets a unique
# ticket id, so a search can know which messages hold the answer.
FACT_TEMPLATES = [
    ("Which port does the {name} staging database listen on?",
     "the staging database for {name} listens on port {port} ({ticket})"),
    ("Why is {dep} pinned in {name}?",
     "we pinned {dep} to {version} in {name} because {newer} broke {fn} ({ticket})"),
    ("Who owns the {mod} module of {name}?",
     "{person} owns {mod} in {name}; ask them before changing {Cls} ({ticket})"),
    ("How many times does the {job} job retry?",
     "the {job} job retries {n} times with exponential backoff starting at {ms} ms ({ticket})"),
    ("Where are the feature flags of {name} configured?",
     "feature flags for {name} live in {path}, read once at start-up by {fn} ({ticket})"),
    ("Why is {test} marked flaky?",
     "{test} is flaky because it depends on the wall clock crossing midnight in UTC ({ticket})"),
    ("What is the rate limit of the {name} public API?",
     "the {name} public API allows {n} requests per minute per token, enforced in {Cls} ({ticket})"),
    ("Which command regenerates the {name} API client?",
     "run `{command}` to regenerate the {name} API client after changing {path} ({ticket})"),
    ("What timeout does {fn} use?",
     "{fn} gives up after {n} seconds because the upstream {dep} gateway cuts idle connections at {m} ({ticket})"),
    ("Why did we drop the index on {table}.{attr}?",
     "we dropped the index on {table}.{attr} because writes were {n}x slower and no query used it ({ticket})"),
]
TOOL_REMINDER = ("\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be "
                 "considered malware. You CAN and SHOULD provide analysis of malware, what it is doing. But you MUST "
                 "refuse to improve or augment the code. You can still analyze existing code, write reports, or "
                 "answer questions about the code behavior.\n</system-reminder>\n")
TODO_RESULT = ("Todos have been modified successfully. Ensure that you continue to use the todo list to track your "
               "progress. Please proceed with the current tasks if applicable")
COMPACT_OPENING = ("This session is being continued from a previous conversation that ran out of context. The "
                   "conversation is summarized below:\n")


def snake(*words: str) -> str:
    return "_".join(words)


def camel(*words: str) -> str:
    return words[0] + "".join(w.title() for w in words[1:])


def pascal(*words: str) -> str:
    return "".join(w.title() for w in words)


def plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "es" if noun.endswith(("s", "x", "ch", "sh")) else noun + "s"


def gerund(verb: str) -> str:
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    if len(verb) == 3 and verb[1] in "aeiou" and verb[2] not in "aeiouwxy" and verb[0] not in "aeiou":
        return verb + verb[-1] + "ing"  # get -> getting
    return verb + "ing"


@dataclass
class Fact:
    """A thing one project's sessions state (in a prompt or a reply) and may ask about later."""
    project: str
    question: str
    statement: str
    ticket: str  # unique in the corpus: the messages holding it are the answer
    said: int = 0  # how many messages state it so far


@dataclass
class Project:
    index: int
    name: str
    language: str
    root: str  # the working directory of its sessions
    package: str
    nouns: list[str]
    files: list[str]  # paths relative to root, most used first
    file_cdf: list[float]
    classes: list[str]
    functions: list[str]
    attrs: list[str]
    tables: list[str]
    tests: list[str]  # test names as the runner prints them (path::name or name)
    commands: dict[str, list[str]]
    deps: list[str]
    errors: list[str]
    error_cdf: list[float]
    facts: list[Fact]
    people: list[str]
    branches: list[str]
    env: list[str]

    def path(self, rng: random.Random) -> str:
        """A file of the project, the often-used ones more often (Zipf)."""
        return self.files[_pick_cdf(rng, self.file_cdf)]

    def error(self, rng: random.Random) -> str:
        return self.errors[_pick_cdf(rng, self.error_cdf)]


def pick(rng: random.Random, items: Any) -> Any:
    """rng.choice, three times faster (this module draws millions)."""
    return items[int(rng.random() * len(items))]


def _pick_cdf(rng: random.Random, cdf: list[float]) -> int:
    import bisect

    return min(bisect.bisect_left(cdf, rng.random() * cdf[-1]), len(cdf) - 1)


def zipf_cdf(count: int, exponent: float = 1.1) -> list[float]:
    total, out = 0.0, []
    for rank in range(1, count + 1):
        total += 1.0 / rank**exponent
        out.append(total)
    return out


def make_project(rng: random.Random, index: int, name: str) -> Project:
    language = rng.choices(list(LANGUAGE_WEIGHTS), weights=list(LANGUAGE_WEIGHTS.values()))[0]
    package = name.replace("-", "_")
    user = pick(rng, USERS)
    root = f"/home/{user}/{pick(rng, HOME_DIRS)}/{name}"
    nouns = rng.sample(NOUNS, 14)
    subs = rng.sample(nouns, 5)
    files: list[str] = []
    count = rng.randint(40, 220)
    while len(files) < count:
        noun, sub = pick(rng, nouns), pick(rng, subs)
        if language == "python":
            path = pick(rng, [f"src/{package}/{sub}/{noun}_{pick(rng, KINDS_PY)}.py",
                               f"src/{package}/{sub}/{pick(rng, KINDS_PY)}.py",
                               f"tests/{sub}/test_{noun}_{pick(rng, KINDS_PY)}.py"])
        elif language == "typescript":
            path = pick(rng, [f"src/{sub}/{camel(noun, pick(rng, KINDS_TS))}.ts",
                               f"src/components/{pascal(noun, pick(rng, ['List', 'Form', 'Card', 'Table', 'Modal']))}.tsx",
                               f"src/{sub}/__tests__/{camel(noun, pick(rng, KINDS_TS))}.test.ts"])
        elif language == "go":
            path = pick(rng, [f"internal/{sub}/{noun}_{pick(rng, KINDS_GO)}.go",
                               f"internal/{sub}/{noun}_{pick(rng, KINDS_GO)}_test.go", f"pkg/{sub}/{noun}.go"])
        else:
            path = pick(rng, [f"src/{sub}/{noun}_{pick(rng, KINDS_RS)}.rs", f"src/{sub}/mod.rs",
                               f"tests/{noun}_{pick(rng, KINDS_RS)}.rs"])
        if path not in files:
            files.append(path)
    config = {"python": ["pyproject.toml", f"src/{package}/settings.py", "README.md", "docker-compose.yml",
                         ".github/workflows/ci.yml", "Makefile", f"src/{package}/__init__.py"],
              "typescript": ["package.json", "tsconfig.json", "README.md", "src/index.ts", ".env.example",
                             "docker-compose.yml", ".github/workflows/ci.yml"],
              "go": ["go.mod", f"cmd/{name}/main.go", "README.md", "Makefile", "docker-compose.yml",
                     ".github/workflows/ci.yml"],
              "rust": ["Cargo.toml", "src/main.rs", "src/lib.rs", "README.md", ".github/workflows/ci.yml"]}[language]
    # The hot files of a project: a few entry points and config files are read again and again.
    files = rng.sample(files[:8], min(8, len(files))) + config[:3] + files[8:] + config[3:]
    verbs = rng.sample(VERBS, 16)
    if language == "python":
        functions = [pick(rng, [snake(verb, noun), snake(verb, plural(noun)), snake(verb, noun, pick(rng, ADJECTIVES))])
                     for verb, noun in ((pick(rng, verbs), pick(rng, nouns)) for _ in range(40))]
        attrs = [snake(pick(rng, nouns), pick(rng, ["id", "status", "amount", "created_at", "count", "url", "key"]))
                 for _ in range(30)]
    elif language == "typescript":
        functions = [pick(rng, [camel(verb, noun), camel(verb, plural(noun)), camel(verb, noun) + "ById",
                                 camel(verb, noun) + "Async"])
                     for verb, noun in ((pick(rng, verbs), pick(rng, nouns)) for _ in range(40))]
        attrs = [camel(pick(rng, nouns), pick(rng, ["id", "status", "amount", "createdAt", "count", "url"]))
                 for _ in range(30)]
    else:
        functions = [pascal(pick(rng, verbs), pick(rng, nouns)) if language == "go"
                     else snake(pick(rng, verbs), pick(rng, nouns))
                     for _ in range(40)]
        attrs = [camel(pick(rng, nouns), pick(rng, ["ID", "Status", "Amount", "Count"])) if language == "go"
                 else snake(pick(rng, nouns), pick(rng, ["id", "status", "amount", "count"])) for _ in range(30)]
    functions = list(dict.fromkeys(functions))
    attrs = list(dict.fromkeys(attrs))
    classes = list(dict.fromkeys(pascal(pick(rng, nouns), pick(rng, ["Service", "Repository", "Client", "Handler",
                                                                        "Config", "Error", "Manager", "Job", "View",
                                                                        "Schema", "Store", ""])) for _ in range(24)))
    tables = [f"{package.split('_')[0]}_{noun}" for noun in nouns[:8]]
    test_files = [f for f in files if "test" in f] or files[:3]
    tests = []
    for _ in range(40):
        fn = pick(rng, functions)
        outcome = pick(rng, ['handles', 'rejects', 'returns', 'retries', 'skips'])
        base = f"test_{fn.lower()}_{outcome}_{pick(rng, ADJECTIVES)}_{pick(rng, nouns)}"
        tests.append(f"{pick(rng, test_files)}::{base}" if language == "python" else
                     (f"Test{pascal(fn)}" if language == "go" else base))
    deps = rng.sample(DEPENDENCIES[language], 6)
    commands = {
        "python": {"test": ["pytest -x -q", "python -m pytest tests/ -q", "pytest -k {kw} -x", "pytest {testfile} -q"],
                   "build": ["ruff check .", "mypy src", "python -m compileall -q src", "ruff format --check ."],
                   "run": [f"python -m {package}", "python manage.py migrate", "python scripts/seed.py",
                           f"python -m {package}.worker --once"],
                   "install": ["pip install -e '.[dev]'", "uv sync", "pip install -r requirements.txt"]},
        "typescript": {"test": ["npm test", "npx vitest run", "npx jest {testfile}", "npm run test -- --run"],
                       "build": ["npx tsc --noEmit", "npm run lint", "npm run build", "npx eslint src --ext .ts,.tsx"],
                       "run": ["npm run dev", "node dist/index.js", "npx prisma migrate dev", "npm run seed"],
                       "install": ["npm install", "npm ci", "pnpm install"]},
        "go": {"test": ["go test ./...", "go test ./internal/... -run {kw} -v", "go test -race ./..."],
               "build": ["go build ./...", "go vet ./...", "golangci-lint run"],
               "run": [f"go run ./cmd/{name}", "make migrate", "make run"],
               "install": ["go mod tidy", "go mod download"]},
        "rust": {"test": ["cargo test", "cargo test {kw} -- --nocapture", "cargo nextest run"],
                 "build": ["cargo build", "cargo clippy -- -D warnings", "cargo check"],
                 "run": ["cargo run --release", "cargo run -- serve", "sqlx migrate run"],
                 "install": ["cargo fetch", "cargo update -p serde"]},
    }[language]
    fill = {"name": name, "pkg": package, "dep": deps[0]}
    errors = []
    for template in rng.sample(PROJECT_ERRORS[language], len(PROJECT_ERRORS[language])) + rng.sample(COMMON_ERRORS, 6):
        errors.append(template.format(**fill, attr=pick(rng, attrs), key=pick(rng, attrs), table=pick(rng, tables),
                                      n=rng.randint(2, 500), m=rng.randint(2, 99), Cls=pick(rng, classes),
                                      fn=pick(rng, functions), mod=pick(rng, nouns)))
    people = rng.sample(PEOPLE, 4)
    branches = ["main"] * 4 + [f"{pick(rng, ['feature', 'fix', 'chore'])}/{pick(rng, verbs)}-{pick(rng, nouns)}"
                               for _ in range(8)]
    env = [f"{package.upper()}_{suffix}" for suffix in ("DATABASE_URL", "REDIS_URL", "LOG_LEVEL", "API_TOKEN", "WORKERS")]
    project = Project(index=index, name=name, language=language, root=root, package=package, nouns=nouns,
                      files=files, file_cdf=zipf_cdf(len(files)), classes=classes, functions=functions, attrs=attrs,
                      tables=tables, tests=tests, commands=commands, deps=deps, errors=errors,
                      error_cdf=zipf_cdf(len(errors), 1.3), facts=[], people=people, branches=branches, env=env)
    prefix = "".join(c for c in name.split("-")[0][:4].upper())
    for number, (question, statement) in enumerate(rng.sample(FACT_TEMPLATES, len(FACT_TEMPLATES))):
        values = dict(name=name, dep=pick(rng, deps), version=f"{rng.randint(1, 5)}.{rng.randint(0, 12)}.{rng.randint(0, 9)}",
                      newer=f"{rng.randint(5, 7)}.0", fn=pick(rng, functions), person=pick(rng, people),
                      mod=pick(rng, nouns), Cls=pick(rng, classes), job=pick(rng, nouns) + "-" + pick(rng, verbs),
                      n=rng.randint(2, 900), ms=pick(rng, [100, 200, 250, 500]), m=rng.randint(30, 300),
                      path=pick(rng, files[:10]), test=pick(rng, tests).split("::")[-1], port=rng.randint(5433, 5499),
                      command=pick(rng, commands["build"]), table=pick(rng, tables), attr=pick(rng, attrs),
                      ticket=f"{prefix}-{index * 97 + number * 13 + 1000}")
        project.facts.append(Fact(project=name, question=question.format(**values),
                                  statement=statement.format(**values), ticket=values["ticket"]))
    return project


# --- code ------------------------------------------------------------------------------------

CODE_BLOCKS = {
    "python": [
        '''def {fn}(self, {arg}: "{Cls}", *, {kw}: bool = False) -> list["{Cls2}"]:
    """{Doc}"""
    if {arg} is None:
        raise {Err}("{arg} is required")
    {var} = self.{repo}.{fn2}({arg}.{attr})
    for {item} in {var}:
        if {item}.{attr2} == {CONST}:
            logger.info("{msg}", extra={{"{attr}": {item}.{attr}}})
            continue
        {item}.{attr2} = {fn3}({item}, {kw}={kw})
    return {var}
''',
        '''class {Cls}({Base}):
    """{Doc}"""

    {attr}: str
    {attr2}: int = {n}
    retries: int = {m}

    def __init__(self, {arg}: "{Cls2}", timeout: float = {n}.0) -> None:
        self.{arg} = {arg}
        self.timeout = timeout
        self._cache: dict[str, "{Cls2}"] = {{}}

    def {fn}(self, key: str) -> "{Cls2} | None":
        if key in self._cache:
            return self._cache[key]
        found = self.{arg}.{fn2}(key)
        self._cache[key] = found
        return found
''',
        '''@transaction.atomic
def {fn}(*, {arg}: "{Cls}", {kw}: str | None = None) -> "{Cls2}":
    {var} = {Cls2}.objects.select_for_update().get(pk={arg}.pk)
    if {var}.{attr2} != "{adj}":
        raise {Err}(f"cannot {verb} a {{{var}.{attr2}}} {noun}")
    {var}.{attr} = {fn3}({arg}, {kw})
    {var}.save(update_fields=["{attr}", "updated_at"])
    transaction.on_commit(lambda: {fn2}_task.delay({var}.pk))
    return {var}
''',
        '''def test_{fn}_{adj}_{noun}({fixture}, {fixture2}):
    {var} = {fixture}.{fn2}({attr}="{adj}")
    result = {fn}({var}, {kw}=True)
    assert result.{attr2} == {n}
    assert {fixture2}.called_once_with({var}.{attr})
    with pytest.raises({Err}):
        {fn}(None)
''',
        '''from {pkg}.{noun} import {Cls}, {fn2}
from {pkg}.{noun2}.{kind} import {Cls2}
from {pkg}.errors import {Err}
import logging

logger = logging.getLogger(__name__)
{CONST} = "{adj}"
''',
        '''    async def {fn}(self, {arg}: str) -> dict[str, Any]:
        async with self.session.get(f"{{self.base_url}}/{nouns}/{{{arg}}}", timeout={n}) as response:
            if response.status == 404:
                raise {Err}({arg})
            response.raise_for_status()
            payload = await response.json()
        return {{"{attr}": payload["{attr}"], "{attr2}": payload.get("{attr2}", {m})}}
''',
    ],
    "typescript": [
        '''export async function {fn}({arg}: {Cls}, options: {{ {kw}?: boolean }} = {{}}): Promise<{Cls2}[]> {{
  const {var} = await db.{noun}.findMany({{ where: {{ {attr}: {arg}.{attr}, {attr2}: "{adj}" }} }});
  if ({var}.length === 0) {{
    throw new {Err}(`no {noun} for ${{{arg}.{attr}}}`);
  }}
  return {var}.map(({item}) => ({{ ...{item}, {attr2}: {fn3}({item}, options.{kw} ?? false) }}));
}}
''',
        '''export class {Cls} {{
  private readonly cache = new Map<string, {Cls2}>();

  constructor(private readonly client: {Cls2}Client, private readonly timeoutMs = {n}) {{}}

  async {fn}(key: string): Promise<{Cls2} | undefined> {{
    const hit = this.cache.get(key);
    if (hit) return hit;
    const found = await this.client.{fn2}(key, {{ timeout: this.timeoutMs }});
    if (found) this.cache.set(key, found);
    return found;
  }}
}}
''',
        '''describe("{fn}", () => {{
  it("{verb}s {adj} {nouns}", async () => {{
    const {var} = build{Cls}({{ {attr}: "{adj}" }});
    const result = await {fn}({var});
    expect(result).toHaveLength({m});
    expect(result[0].{attr2}).toBe("{adj}");
  }});
}});
''',
        '''import {{ {Cls}, {fn2} }} from "../{noun}/{noun}{Kind}";
import type {{ {Cls2} }} from "../types";
import {{ z }} from "zod";

export const {CONST} = {n};
export const {noun}Schema = z.object({{ {attr}: z.string().uuid(), {attr2}: z.enum(["{adj}", "active"]) }});
''',
        '''export function use{Cls}({arg}: string) {{
  const [{var}, set{Cls}] = useState<{Cls2} | null>(null);
  useEffect(() => {{
    let cancelled = false;
    {fn}({arg}).then((value) => {{ if (!cancelled) set{Cls}(value); }});
    return () => {{ cancelled = true; }};
  }}, [{arg}]);
  return {var};
}}
''',
    ],
    "go": [
        '''func (s *{Cls}) {fn}(ctx context.Context, {arg} string) ([]{Cls2}, error) {{
	rows, err := s.db.Query(ctx, `SELECT {attr}, {attr2} FROM {table} WHERE {attr} = $1`, {arg})
	if err != nil {{
		return nil, fmt.Errorf("{fn}: %w", err)
	}}
	defer rows.Close()
	var out []{Cls2}
	for rows.Next() {{
		var {item} {Cls2}
		if err := rows.Scan(&{item}.{Attr}, &{item}.{Attr2}); err != nil {{
			return nil, err
		}}
		out = append(out, {item})
	}}
	return out, rows.Err()
}}
''',
        '''type {Cls} struct {{
	{Attr}   string
	{Attr2}  int
	Timeout time.Duration
	client  *http.Client
}}

func New{Cls}(timeout time.Duration) *{Cls} {{
	return &{Cls}{{Timeout: timeout, client: &http.Client{{Timeout: timeout}}}}
}}
''',
        '''func Test{Fn}(t *testing.T) {{
	s := newTestStore(t)
	got, err := s.{fn}(context.Background(), "{adj}")
	require.NoError(t, err)
	assert.Len(t, got, {m})
	assert.Equal(t, "{adj}", got[0].{Attr2})
}}
''',
    ],
    "rust": [
        '''pub async fn {fn}(pool: &PgPool, {arg}: Uuid) -> Result<Vec<{Cls2}>, {Err}> {{
    let rows = sqlx::query_as!({Cls2}, "SELECT {attr}, {attr2} FROM {table} WHERE {attr} = $1", {arg})
        .fetch_all(pool)
        .await?;
    if rows.is_empty() {{
        return Err({Err}::NotFound({arg}));
    }}
    Ok(rows)
}}
''',
        '''#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct {Cls} {{
    pub {attr}: String,
    pub {attr2}: i64,
    #[serde(default)]
    pub retries: u32,
}}

impl {Cls} {{
    pub fn {fn}(&self) -> bool {{
        self.{attr2} > {n} && self.retries < {m}
    }}
}}
''',
        '''#[tokio::test]
async fn {fn}_{adj}() {{
    let pool = test_pool().await;
    let got = {fn2}(&pool, Uuid::new_v4()).await;
    assert!(matches!(got, Err({Err}::NotFound(_))));
}}
''',
    ],
}


def code_block(rng: random.Random, project: Project) -> str:
    return pick(rng, CODE_BLOCKS[project.language]).format_map(Slots(rng, project))


def other_file(rng: random.Random, project: Project, path: str) -> list[str]:
    """Config and documentation files: what they hold matters less than that they look like it."""
    name = project.name
    if path.endswith(".md"):
        lines = [f"# {name}", "", sentence(rng, project, ASSISTANT_FACTS), "", "## Development", "", "```sh",
                 *rng.sample(sum(project.commands.values(), []), 4), "```", ""]
        for noun in project.nouns[:6]:
            lines += [f"### {noun.title()}", "", sentence(rng, project, ASSISTANT_FACTS),
                      sentence(rng, project, ASSISTANT_PLANS), ""]
        return lines
    if path.endswith((".yml", ".yaml")):
        return [f"name: {name}", "on:", "  push:", "    branches: [main]", "  pull_request:", "jobs:", "  test:",
                "    runs-on: ubuntu-latest", "    services:", "      postgres:", "        image: postgres:16",
                "        env:", "          POSTGRES_PASSWORD: postgres", "        ports: ['5432:5432']",
                "    steps:", "      - uses: actions/checkout@v4",
                *[f"      - run: {c}" for c in project.commands["install"][:1] + project.commands["test"][:2]]]
    if path.endswith(".json"):
        deps = ",\n".join(f'    "{d}": "^{rng.randint(1, 18)}.{rng.randint(0, 9)}.{rng.randint(0, 20)}"' for d in project.deps)
        return ["{", f'  "name": "{name}",', '  "version": "0.%d.0",' % rng.randint(1, 40), '  "private": true,',
                '  "scripts": {', '    "dev": "next dev",', '    "build": "tsc -p .",', '    "test": "vitest run",',
                '    "lint": "eslint src"', "  },", '  "dependencies": {', deps, "  }", "}"]
    if path.endswith((".toml", ".mod")):
        return ['[project]' if path.endswith(".toml") else f"module github.com/acme/{name}", f'name = "{name}"',
                f'version = "0.{rng.randint(1, 40)}.0"', 'requires-python = ">=3.11"', "dependencies = [",
                *[f'    "{d}>={rng.randint(1, 5)}.{rng.randint(0, 9)}",' for d in project.deps], "]", "",
                "[tool.pytest.ini_options]", 'addopts = "-q"', 'testpaths = ["tests"]']
    return [f"{key}=" for key in project.env] + ["", "all: test", "test:", f"\t{project.commands['test'][0]}"]


# --- natural language ------------------------------------------------------------------------

ASSISTANT_FACTS = [
    "`{fn}` in `{path}` assumes `{attr}` is always set, but {nouns} created by the {adj} import path leave it empty.",
    "The failure comes from `{Cls}.{fn}`: it reads `{attr}` before the transaction commits.",
    "`{path}` is imported by {n} modules, so renaming `{fn}` touches more than it looks.",
    "The {noun} table has no index on `{attr}`, which is why the query scans {n},000 rows.",
    "`{test}` fails only when `{env}` is unset, because the fixture falls back to the {adj} config.",
    "The retry loop in `{fn}` never resets its counter, so the third {noun} always gives up.",
    "`{Cls}` caches {nouns} per process, which explains the stale {attr} you saw after the deploy.",
    "The error `{error}` is raised by `{fn}` when the {noun} belongs to another tenant.",
    "The {dep} upgrade changed the default of `{kw}`, which is what broke `{fn}`.",
]
ASSISTANT_PLANS = [
    "Let me read `{path}` first.",
    "I'll run the test suite to see the current failures.",
    "Now let me check where `{fn}` is called.",
    "Let me look at how `{Cls}` is constructed in the tests.",
    "I'll search for other uses of `{attr}` before changing it.",
    "The tests pass now. Let me also run the type checker.",
    "That fixed the first failure; the second one is in `{test}`.",
    "Let me check the git history of `{path}` to see why this was added.",
    "I'll update `{fn}` and add a regression test.",
    "Good, the migration applies cleanly. Now the {noun} view.",
    "Let me verify the fix against the {adj} data as well.",
]
USER_ASKS = [
    "The test {test} fails with `{error}`. Can you fix it?",
    "Add a `{kw}` option to `{fn}` in {path}; when it is set, skip {adj} {nouns}.",
    "Why does `{fn}` return an empty list for {adj} {nouns}?",
    "Refactor {path} so that `{Cls}` no longer talks to the database directly.",
    "Run the tests and fix whatever breaks.",
    "Can you explain what `{Cls}.{fn}` does and who calls it?",
    "We need an endpoint that lists {nouns} by `{attr}`, paginated, newest first.",
    "The {noun} page is slow in production, {n} ms per request. Find out why.",
    "Please add type hints to {path} and make mypy happy.",
    "Rename `{attr}` to `{attr2}` everywhere, including the migration.",
    "I get `{error}` when I run `{command}`.",
    "Write tests for `{fn}`: the {adj} case, the empty case and the error case.",
    "Upgrade {dep} and fix the deprecation warnings.",
    "Commit this with a good message and open a PR against main.",
    "Look at the CI failure on {branch} and fix it.",
]
USER_SHORT = ["yes", "go ahead", "continue", "commit it", "run the tests again", "looks good, push it",
              "no, keep the old name", "try again", "what about the other failing test?", "ok", "ship it",
              "undo that last change", "use the existing helper instead", "thanks!"]
USER_DETAILS = [
    "It started after the {dep} upgrade last week.",
    "Keep the public API of `{Cls}` unchanged, other services use it.",
    "Don't touch {path}, {person} is rewriting it.",
    "The staging logs show it for about one {noun} in fifty.",
    "Make sure it still works when `{env}` is not set.",
    "We discussed this in {ticket}.",
    "Please keep the change small; we release on Thursday.",
    "I think the problem is in `{fn}` but I'm not sure.",
]
REPLY_OPENINGS = [
    "I fixed the failing {noun} test.", "Done: `{fn}` now handles {adj} {nouns}.",
    "Here is what I found about the slow {noun} page.", "The refactor is in place and the suite passes.",
    "I added the `{kw}` option and tests for it.", "The CI failure was a real bug, not a flake.",
]
REPLY_BULLETS = [
    "- `{path}`: `{fn}` now checks `{attr}` before {verbing}.",
    "- `{path}`: new test `{test}` covers the {adj} case.",
    "- Moved the {noun} lookup out of the loop (one query instead of {n}).",
    "- `{Cls}` takes the timeout from `{env}` (default {m} s).",
    "- Removed the unused `{fn}` helper.",
    "- The migration adds an index on `{table}.{attr}`.",
]
REPLY_CLOSINGS = [
    "All {n} tests pass and mypy is clean.", "I have not pushed; say if you want a PR.",
    "One thing to decide: should {adj} {nouns} be retried or dropped?",
    "The remaining warning comes from {dep} itself and is harmless.",
    "Run `{command}` locally to check it against your data.",
]


def _title(word: str) -> str:
    return word[:1].upper() + word[1:]


# How each template slot is filled; a slot derived from another (nouns from noun) reads it through
# the mapping, so one template's slots agree with each other.
_SLOT_MAKERS: dict[str, Any] = {
    "fn": lambda r, p, s: pick(r, p.functions), "fn2": lambda r, p, s: pick(r, p.functions),
    "fn3": lambda r, p, s: pick(r, p.functions), "Fn": lambda r, p, s: _title(s["fn"]),
    "Cls": lambda r, p, s: pick(r, p.classes), "Cls2": lambda r, p, s: pick(r, p.classes),
    "Base": lambda r, p, s: pick(r, ["Base", "object", "Protocol"]), "Err": lambda r, p, s: pick(r, p.classes[:4]) + "Error",
    "noun": lambda r, p, s: pick(r, p.nouns), "noun2": lambda r, p, s: pick(r, p.nouns),
    "nouns": lambda r, p, s: plural(s["noun"]), "arg": lambda r, p, s: s["noun"], "var": lambda r, p, s: plural(s["noun2"]),
    "item": lambda r, p, s: s["noun2"][:1], "repo": lambda r, p, s: s["noun"] + "_store",
    "fixture": lambda r, p, s: s["noun"] + "_factory", "fixture2": lambda r, p, s: "mock_" + s["noun2"],
    "CONST": lambda r, p, s: f"{s['noun'].upper()}_{pick(r, ['LIMIT', 'STATUS', 'TIMEOUT', 'BATCH'])}",
    "kw": lambda r, p, s: pick(r, ADJECTIVES), "adj": lambda r, p, s: pick(r, ADJECTIVES),
    "attr": lambda r, p, s: pick(r, p.attrs), "attr2": lambda r, p, s: pick(r, p.attrs),
    "Attr": lambda r, p, s: _title(s["attr"]), "Attr2": lambda r, p, s: _title(s["attr2"]),
    "msg": lambda r, p, s: f"{pick(r, VERBS)} {s['noun']} skipped",
    "Doc": lambda r, p, s: sentence(r, p, ASSISTANT_FACTS).rstrip("."),
    "n": lambda r, p, s: r.randint(2, 400), "m": lambda r, p, s: r.randint(1, 60),
    "verb": lambda r, p, s: pick(r, VERBS), "verbing": lambda r, p, s: gerund(s["verb"]),
    "kind": lambda r, p, s: pick(r, KINDS_PY), "Kind": lambda r, p, s: pick(r, KINDS_TS),
    "pkg": lambda r, p, s: p.package, "table": lambda r, p, s: pick(r, p.tables),
    "path": lambda r, p, s: p.path(r), "test": lambda r, p, s: pick(r, p.tests).split("::")[-1],
    "env": lambda r, p, s: pick(r, p.env), "error": lambda r, p, s: p.error(r).split("\n")[0],
    "dep": lambda r, p, s: pick(r, p.deps), "command": lambda r, p, s: _command(r, p, "test"),
    "person": lambda r, p, s: pick(r, p.people), "branch": lambda r, p, s: pick(r, p.branches),
    "ticket": lambda r, p, s: pick(r, p.facts).ticket,
}


class Slots(dict):  # type: ignore[type-arg]
    """A template's values, each made when the template asks for it (a sentence uses a few of ~40)."""
    __slots__ = ("rng", "project")

    def __init__(self, rng: random.Random, project: Project) -> None:
        super().__init__()
        self.rng, self.project = rng, project

    def __missing__(self, key: str) -> Any:
        value = self[key] = _SLOT_MAKERS[key](self.rng, self.project, self)
        return value


def sentence(rng: random.Random, project: Project, templates: list[str]) -> str:
    return pick(rng, templates).format_map(Slots(rng, project))


def _command(rng: random.Random, project: Project, family: str) -> str:
    command = pick(rng, project.commands[family])
    return command.format(kw=pick(rng, project.functions)[:12], testfile=pick(rng, project.tests).split("::")[0])


# --- sizes ------------------------------------------------------------------------------------

def lognormal(rng: random.Random, median: float, sigma: float, low: int = 1, high: int = 10**7) -> int:
    return int(min(high, max(low, rng.lognormvariate(math.log(median), sigma))))


def fill_to(target: int, make: Any) -> str:
    """Whole units from make() (lines, paragraphs) until about `target` characters."""
    parts, size = [], 0
    while size < target:
        part = make()
        parts.append(part)
        size += len(part) + 1
    return "\n".join(parts)


# --- tool calls --------------------------------------------------------------------------------

@dataclass
class ToolCall:
    """One tool call: what a transcript stores (input, then the result text) and what a
    PostToolUse hook stores (input and a structured response)."""
    name: str
    input: dict[str, Any]
    result: Any  # the tool_result content: a string, or a list of text blocks (Task)
    response: Any  # the hook's tool_response
    is_error: bool = False


class Files:
    """Each project's file contents, made on first read and kept (least recently used out): a file
    read in two sessions says the same thing both times."""

    def __init__(self, seed: int, size: int = 400) -> None:
        self.seed = seed
        self.cache: OrderedDict[tuple[int, str], list[str]] = OrderedDict()
        self.size = size

    def lines(self, project: Project, path: str) -> list[str]:
        key = (project.index, path)
        found = self.cache.get(key)
        if found is not None:
            self.cache.move_to_end(key)
            return found
        rng = random.Random(self.seed * 1_000_003 + project.index * 10_007 + project.files.index(path))
        if path.endswith((".md", ".yml", ".yaml", ".json", ".toml", ".mod", ".example")) or path == "Makefile":
            lines = other_file(rng, project, path)
        else:
            # Source files: median ~150 lines (~5,000 characters), a long tail past 1,000 lines.
            want = lognormal(rng, 150, 0.9, 8, 2500)
            lines = []
            while len(lines) < want:
                lines += code_block(rng, project).split("\n")
        self.cache[key] = lines
        if len(self.cache) > self.size:
            self.cache.popitem(last=False)
        return lines


def numbered(lines: list[str], start: int) -> str:
    """Claude Code's Read output: the line number right-aligned in six columns, an arrow, the line."""
    return "\n".join(f"{start + i:6d}→{line}" for i, line in enumerate(lines))


class Tools:
    """Builds the tool calls of a project's session."""

    def __init__(self, rng: random.Random, files: Files) -> None:
        self.rng = rng
        self.files = files

    def abs(self, project: Project, path: str) -> str:
        return f"{project.root}/{path}"

    def call(self, name: str, project: Project) -> ToolCall:
        return getattr(self, "_" + name.lower())(project)

    # Read: a whole file from the top (most reads), or a window of it.
    def _read(self, project: Project) -> ToolCall:
        rng = self.rng
        path = project.path(rng)
        lines = self.files.lines(project, path)
        start, take = 1, min(len(lines), 2000)
        if len(lines) > 120 and rng.random() < 0.3:
            start = rng.randint(1, len(lines) - 60)
            take = min(pick(rng, [50, 80, 100, 150, 200]), len(lines) - start + 1)
        window = lines[start - 1 : start - 1 + take]
        args: dict[str, Any] = {"file_path": self.abs(project, path)}
        if start > 1:
            args.update(offset=start, limit=take)
        if rng.random() < 0.02:
            return ToolCall("Read", args, "<tool_use_error>File does not exist.</tool_use_error>", None, True)
        content = "\n".join(window)
        response = {"type": "text", "file": {"filePath": args["file_path"], "content": content,
                                             "numLines": len(window), "startLine": start, "totalLines": len(lines)}}
        return ToolCall("Read", args, numbered(window, start) + TOOL_REMINDER, response)

    def _edit(self, project: Project) -> ToolCall:
        rng = self.rng
        path = project.path(rng)
        lines = self.files.lines(project, path)
        at = rng.randint(0, max(0, len(lines) - 12))
        old = lines[at : at + lognormal(rng, 4, 0.7, 1, 40)]
        new = list(old)
        for _ in range(lognormal(rng, 2, 0.8, 1, 30)):
            new.insert(rng.randint(0, len(new)), "    " + code_block(rng, project).split("\n")[rng.randint(0, 3)])
        args = {"file_path": self.abs(project, path), "old_string": "\n".join(old), "new_string": "\n".join(new)}
        if rng.random() < 0.05:
            error = f"<tool_use_error>String to replace not found in file.\nString: {args['old_string'][:400]}</tool_use_error>"
            return ToolCall("Edit", args, error, None, True)
        snippet_start = max(0, at - 4)
        snippet = lines[snippet_start:at] + new + lines[at + len(old) : at + len(old) + 5]
        result = (f"The file {args['file_path']} has been updated. Here's the result of running `cat -n` on a snippet "
                  f"of the edited file:\n" + numbered(snippet, snippet_start + 1))
        patch = [{"oldStart": at + 1, "oldLines": len(old), "newStart": at + 1, "newLines": len(new),
                  "lines": [" " + line for line in lines[snippet_start:at]] + ["-" + line for line in old]
                  + ["+" + line for line in new]}]
        response = {"filePath": args["file_path"], "oldString": args["old_string"], "newString": args["new_string"],
                    "originalFile": "\n".join(lines), "structuredPatch": patch, "userModified": False,
                    "replaceAll": False}
        return ToolCall("Edit", args, result, response)

    def _write(self, project: Project) -> ToolCall:
        rng = self.rng
        path = project.path(rng).rsplit(".", 1)
        path_new = f"{path[0]}_{pick(rng, ADJECTIVES)}.{path[1]}" if len(path) == 2 else path[0]
        target = lognormal(rng, 2500, 0.9, 100, 30_000)
        content = fill_to(target, lambda: code_block(rng, project))
        args = {"file_path": self.abs(project, path_new), "content": content}
        response = {"type": "create", "filePath": args["file_path"], "content": content, "structuredPatch": []}
        return ToolCall("Write", args, f"File created successfully at: {args['file_path']}", response)

    def _grep(self, project: Project) -> ToolCall:
        rng = self.rng
        pattern = pick(rng, [pick(rng, project.functions), pick(rng, project.classes), pick(rng, project.attrs),
                              f"{pick(rng, project.functions)}\\(", f"class {pick(rng, project.classes)}"])
        args: dict[str, Any] = {"pattern": pattern, "path": project.root}
        if rng.random() < 0.4:
            args["glob"] = f"*.{EXTENSIONS[project.language]}"
        hits = rng.sample(project.files, min(len(project.files), lognormal(rng, 5, 1.0, 0, 60)))
        if rng.random() < 0.55:
            args["output_mode"] = "files_with_matches"
            paths = [self.abs(project, p) for p in hits]
            result = (f"Found {len(paths)} file{'s' if len(paths) != 1 else ''}\n" + "\n".join(paths)
                      if paths else "No files found")
            response = {"mode": "files_with_matches", "filenames": paths, "numFiles": len(paths)}
        else:
            args.update(output_mode="content", **{"-n": True})
            rows = []
            for p in hits:
                lines = self.files.lines(project, p)
                for _ in range(rng.randint(1, 4)):
                    at = rng.randrange(len(lines))
                    rows.append(f"{self.abs(project, p)}:{at + 1}:{lines[at]}")
            result = "\n".join(rows) or "No matches found"
            response = {"mode": "content", "numFiles": len(hits), "filenames": [], "content": result,
                        "numLines": len(rows)}
        return ToolCall("Grep", args, result, response)

    def _glob(self, project: Project) -> ToolCall:
        rng = self.rng
        ext = EXTENSIONS[project.language]
        pattern = pick(rng, [f"**/*.{ext}", f"**/*test*.{ext}", f"src/**/*{pick(rng, project.nouns)}*",
                              "**/*.md", f"**/{pick(rng, project.nouns)}*"])
        found = rng.sample(project.files, min(len(project.files), lognormal(rng, 12, 1.1, 0, 100)))
        paths = [self.abs(project, p) for p in found]
        result = "\n".join(paths) if paths else "No files found"
        response = {"filenames": paths, "durationMs": rng.randint(3, 90), "numFiles": len(paths), "truncated": False}
        return ToolCall("Glob", {"pattern": pattern}, result, response)

    def _todowrite(self, project: Project) -> ToolCall:
        rng = self.rng
        steps = [sentence(rng, project, ASSISTANT_PLANS).rstrip(".").replace("Let me ", "").replace("I'll ", "")
                 for _ in range(rng.randint(2, 8))]
        done = rng.randint(0, len(steps) - 1)
        todos = [{"content": s[:1].upper() + s[1:], "status": "completed" if i < done else
                  ("in_progress" if i == done else "pending"), "activeForm": s[:1].upper() + s[1:]}
                 for i, s in enumerate(steps)]
        previous = [dict(t, status="pending" if i >= done - 1 else t["status"]) for i, t in enumerate(todos)]
        return ToolCall("TodoWrite", {"todos": todos}, TODO_RESULT, {"oldTodos": previous, "newTodos": todos})

    def _webfetch(self, project: Project) -> ToolCall:
        rng = self.rng
        url = "https://" + pick(rng, DOC_SITES)
        args = {"url": url, "prompt": f"How do I {pick(rng, VERBS)} {pick(rng, project.nouns)}s with "
                                      f"{pick(rng, project.deps)}? Quote the relevant example."}
        text = fill_to(lognormal(rng, 2200, 0.7, 200, 12_000),
                       lambda: sentence(rng, project, ASSISTANT_FACTS) + " " + sentence(rng, project, ASSISTANT_FACTS))
        response = {"bytes": rng.randint(20_000, 400_000), "code": 200, "codeText": "OK", "result": text,
                    "durationMs": rng.randint(300, 9000), "url": url}
        return ToolCall("WebFetch", args, text, response)

    def _websearch(self, project: Project) -> ToolCall:
        rng = self.rng
        query = f"{pick(rng, project.deps)} {project.error(rng).split(':')[0]} {pick(rng, ['fix', '2026', 'github issue'])}"
        links = [{"title": f"{pick(rng, project.deps)}: {sentence(rng, project, ASSISTANT_PLANS)[:60]}",
                  "url": "https://" + pick(rng, DOC_SITES)} for _ in range(rng.randint(3, 10))]
        import json

        summary = fill_to(lognormal(rng, 1800, 0.6, 200, 8000), lambda: sentence(rng, project, ASSISTANT_FACTS))
        result = f'Web search results for query: "{query}"\n\nLinks: {json.dumps(links)}\n\n{summary}'
        return ToolCall("WebSearch", {"query": query}, result, {"query": query, "results": [{"content": links}, summary],
                                                               "durationSeconds": round(rng.uniform(1, 12), 2)})

    def _task(self, project: Project) -> ToolCall:
        rng = self.rng
        prompt = fill_to(lognormal(rng, 900, 0.6, 100, 6000), lambda: sentence(rng, project, USER_ASKS))
        report = fill_to(lognormal(rng, 2200, 0.8, 200, 15_000), lambda: pick(rng, [
            sentence(rng, project, ASSISTANT_FACTS), sentence(rng, project, REPLY_BULLETS),
            f"- {self.abs(project, project.path(rng))}:{rng.randint(1, 400)} — {sentence(rng, project, ASSISTANT_FACTS)}"]))
        args = {"description": f"Find {pick(rng, project.nouns)} {pick(rng, VERBS)} paths",
                "prompt": prompt, "subagent_type": pick(rng, ["Explore", "general-purpose", "Plan"])}
        blocks = [{"type": "text", "text": report}]
        response = {"status": "completed", "prompt": prompt, "content": blocks, "totalDurationMs": rng.randint(8000, 300_000),
                    "totalTokens": rng.randint(5000, 90_000), "totalToolUseCount": rng.randint(3, 60)}
        return ToolCall("Task", args, blocks, response)

    def _mcp(self, project: Project) -> ToolCall:
        import json

        rng = self.rng
        if rng.random() < 0.6:
            name, args = "mcp__winni__dewey_search", {"query": pick(rng, project.facts).question, "limit": 5}
            hits = [{"conversation_id": f"{rng.getrandbits(64):016x}", "turn_number": rng.randint(1, 80),
                     "role": pick(rng, ["user", "assistant"]), "snippet": sentence(rng, project, ASSISTANT_FACTS),
                     "score": round(rng.random(), 4)} for _ in range(rng.randint(1, 5))]
            text = json.dumps({"results": hits, "total": len(hits) + rng.randint(0, 40)})
        else:
            name = "mcp__github__get_issue"
            args = {"owner": "acme", "repo": project.name, "issue_number": rng.randint(10, 900)}
            text = json.dumps({"number": args["issue_number"], "title": sentence(rng, project, USER_ASKS)[:80],
                               "state": "open", "body": fill_to(lognormal(rng, 900, 0.8, 50, 8000),
                                                                lambda: sentence(rng, project, USER_ASKS)),
                               "labels": [{"name": pick(rng, ["bug", "enhancement", "flaky"])}]}, indent=2)
        return ToolCall(name, args, text, [{"type": "text", "text": text}])

    # Bash: tests, git, builds, listings, installs, app runs, curl, docker, grep.
    def _bash(self, project: Project) -> ToolCall:
        rng = self.rng
        family = rng.choices(["test", "git", "build", "ls", "install", "run", "curl", "docker", "grep", "quiet"],
                             weights=[27, 18, 11, 11, 4, 7, 4, 4, 4, 10])[0]
        command, description, out, err, fails = getattr(self, "_bash_" + family)(project)
        args = {"command": command, "description": description}
        if fails:
            return ToolCall("Bash", args, f"Exit code {pick(rng, [1, 1, 1, 2, 101, 137])}\n{out}\n{err}".rstrip(),
                            None, True)
        result = (out + ("\n" + err if err else "")) or "(No content)"
        return ToolCall("Bash", args, result, {"stdout": out, "stderr": err, "interrupted": False, "isImage": False})

    def _bash_test(self, project: Project) -> tuple[str, str, str, str, bool]:
        rng = self.rng
        cmd = (f"cd {project.root} && {_command(rng, project, 'test')}",
                          pick(rng, ["Run the test suite", "Run the failing test", "Run tests"]))
        failed = rng.random() < 0.35
        total = lognormal(rng, 140, 1.0, 3, 4000)
        failures = lognormal(rng, 1.5, 0.8, 1, 40) if failed else 0
        if project.language == "python":
            lines = ["=" * 29 + " test session starts " + "=" * 30,
                     f"platform linux -- Python 3.12.{rng.randint(1, 9)}, pytest-8.3.{rng.randint(0, 5)}, pluggy-1.5.0",
                     f"rootdir: {project.root}", "configfile: pyproject.toml", f"collected {total} items", ""]
            files = [t.split("::")[0] for t in project.tests]
            for f in dict.fromkeys(rng.sample(files, min(len(files), 1 + total // 25))):
                dots = "".join(pick(rng, "........F" if failed else ".") for _ in range(rng.randint(3, 40)))
                lines.append(f"{f} {dots:<50} [{rng.randint(1, 100):3d}%]")
            if failed:
                lines += ["", "=" * 35 + " FAILURES " + "=" * 35]
                for test in rng.sample(project.tests, min(failures, len(project.tests))):
                    lines += self._python_failure(project, test)
                lines += ["=" * 27 + " short test summary info " + "=" * 28]
                lines += [f"FAILED {t} - {project.error(rng).splitlines()[0][:80]}"
                          for t in rng.sample(project.tests, min(failures, 5))]
            seconds = round(rng.uniform(0.4, 90), 2)
            summary = f"{failures} failed, {total - failures} passed" if failed else f"{total} passed"
            lines.append(f"{'=' * 20} {summary} in {seconds}s {'=' * 20}")
        elif project.language == "typescript":
            lines = []
            for f in rng.sample(project.files, min(len(project.files), 1 + total // 20)):
                ok = not failed or rng.random() < 0.7
                lines.append(f" {'✓' if ok else '❯'} {f} ({rng.randint(1, 40)} tests) {rng.randint(5, 900)}ms")
                if not ok:
                    lines += self._js_failure(project)
            lines += ["", f" Test Files  {'%d failed | ' % failures if failed else ''}{len(lines)} passed",
                      f"      Tests  {total} passed", f"   Duration  {rng.uniform(0.5, 30):.2f}s"]
        else:
            lines = []
            for noun in rng.sample(project.nouns, 6):
                lines.append(f"ok  \tgithub.com/acme/{project.name}/internal/{noun}\t{rng.uniform(0.01, 3):.3f}s"
                             if project.language == "go" else f"test {noun}::tests::{pick(rng, project.functions)} ... ok")
            if failed:
                lines += self._go_rust_failure(project)
            lines.append("FAIL" if failed and project.language == "go" else
                         f"test result: {'FAILED' if failed else 'ok'}. {total - failures} passed; {failures} failed")
        return (*cmd, "\n".join(lines), "", failed)

    def _python_failure(self, project: Project, test: str) -> list[str]:
        rng = self.rng
        name = test.split("::")[-1]
        lines = [f"{'_' * 20} {name} {'_' * 20}", ""]
        lines += ["    " + line for line in code_block(rng, project).split("\n")[:rng.randint(4, 12)]]
        lines += self._traceback(project).split("\n")[1:]
        lines.append(f"{test.split('::')[0]}:{rng.randint(10, 400)}: {project.error(rng).split(':')[0]}")
        return lines

    def _traceback(self, project: Project) -> str:
        rng = self.rng
        if project.language == "python":
            frames = []
            for _ in range(rng.randint(2, 9)):
                path = project.path(rng)
                frames += [f'  File "{project.root}/{path}", line {rng.randint(5, 600)}, in {pick(rng, project.functions)}',
                           "    " + code_block(rng, project).split("\n")[rng.randint(1, 4)].strip()]
            return "Traceback (most recent call last):\n" + "\n".join(frames) + "\n" + project.error(rng)
        if project.language == "typescript":
            frames = [f"    at {pick(rng, project.functions)} ({project.root}/{project.path(rng)}:{rng.randint(2, 300)}:{rng.randint(1, 40)})"
                      for _ in range(rng.randint(3, 10))]
            return project.error(rng) + "\n" + "\n".join(frames)
        if project.language == "go":
            return (f"panic: {project.error(rng)}\n\ngoroutine {rng.randint(1, 90)} [running]:\n" + "\n".join(
                f"github.com/acme/{project.name}/internal/{pick(rng, project.nouns)}.{pick(rng, project.functions)}(...)\n"
                f"\t{project.root}/{project.path(rng)}:{rng.randint(5, 400)} +0x{rng.getrandbits(12):x}"
                for _ in range(rng.randint(2, 7))))
        return (f"thread 'main' panicked at {project.path(rng)}:{rng.randint(5, 400)}:{rng.randint(1, 60)}:\n"
                f"{project.error(rng)}\nstack backtrace:\n" + "\n".join(
                    f"  {i}: {project.package}::{pick(rng, project.nouns)}::{pick(rng, project.functions)}"
                    for i in range(rng.randint(3, 9))))

    def _js_failure(self, project: Project) -> list[str]:
        rng = self.rng
        return ["", f"  FAIL  {project.path(rng)} > {pick(rng, project.functions)} > {sentence(rng, project, ASSISTANT_PLANS)[:50]}",
                f"AssertionError: expected {rng.randint(0, 9)} to be {rng.randint(10, 99)} // Object.is equality",
                *self._traceback(project).split("\n")[1:], ""]

    def _go_rust_failure(self, project: Project) -> list[str]:
        rng = self.rng
        return [f"--- FAIL: {pick(rng, project.tests)} ({rng.uniform(0, 2):.2f}s)",
                f"    {project.path(rng)}:{rng.randint(5, 300)}: ", f"        Error: {project.error(rng)}",
                *self._traceback(project).split("\n")]

    def _bash_git(self, project: Project) -> tuple[str, str, str, str, bool]:
        rng = self.rng
        kind = pick(rng, ["status", "diff", "diff", "log", "commit"])
        if kind == "status":
            cmd = ("git status", "Show working tree status")
            changed = rng.sample(project.files, min(len(project.files), rng.randint(1, 9)))
            return (*cmd, f"On branch {pick(rng, project.branches)}\nChanges not staged for commit:\n"
                    '  (use "git add <file>..." to update what will be committed)\n'
                    + "\n".join(f"\tmodified:   {p}" for p in changed)
                    + '\n\nno changes added to commit (use "git add" and/or "git commit -a")', "", False)
        if kind == "log":
            cmd = ("git log --oneline -20", "Show recent commits")
            return (*cmd, "\n".join(f"{rng.getrandbits(28):07x} {sentence(rng, project, REPLY_OPENINGS)}"
                                    for _ in range(20)), "", False)
        if kind == "commit":
            message = sentence(rng, project, REPLY_OPENINGS)
            cmd = (f"git add -A && git commit -m \"$(cat <<'EOF'\n{message}\n\n"
                              f"{sentence(rng, project, ASSISTANT_FACTS)}\nEOF\n)\"", "Commit the changes")
            return (*cmd, f"[{pick(rng, project.branches)} {rng.getrandbits(28):07x}] {message}\n"
                    f" {rng.randint(1, 9)} files changed, {rng.randint(1, 300)} insertions(+), {rng.randint(0, 90)} deletions(-)",
                    "", False)
        cmd = ("git diff" + pick(rng, ["", " --stat", f" {project.path(rng)}"]), "Show the diff")
        target = lognormal(rng, 2500, 1.2, 80, 60_000)

        def hunk() -> str:
            path = project.path(rng)
            lines = self.files.lines(project, path)
            at = rng.randrange(len(lines))
            body = [" " + line for line in lines[at : at + 3]] + ["-" + line for line in lines[at + 3 : at + 5]]
            body += ["+" + line for line in code_block(rng, project).split("\n")[: rng.randint(2, 10)]]
            return (f"diff --git a/{path} b/{path}\nindex {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644\n"
                    f"--- a/{path}\n+++ b/{path}\n@@ -{at + 1},5 +{at + 1},{len(body)} @@\n" + "\n".join(body))

        return (*cmd, fill_to(target, hunk), "", False)

    def _bash_build(self, project: Project) -> tuple[str, str, str, str, bool]:
        rng = self.rng
        cmd = (_command(rng, project, "build"), pick(rng, ["Type-check", "Lint", "Build the project"]))
        if rng.random() < 0.25:
            problems = [f"{project.path(rng)}:{rng.randint(1, 500)}:{rng.randint(1, 80)}: {project.error(rng).splitlines()[0]}"
                        for _ in range(lognormal(rng, 3, 1.0, 1, 200))]
            return (*cmd, "\n".join(problems) + f"\nFound {len(problems)} errors in {rng.randint(1, 9)} files", "", True)
        return (*cmd, pick(rng, ["All checks passed!", "Success: no issues found in %d source files" % rng.randint(10, 300),
                                  "", "Finished `dev` profile [unoptimized + debuginfo] target(s) in %.2fs"
                                  % rng.uniform(1, 90)]), "", False)

    def _bash_ls(self, project: Project) -> tuple[str, str, str, str, bool]:
        rng = self.rng
        directory = project.path(rng).rsplit("/", 1)[0] if "/" in project.files[0] else "."
        kind = pick(rng, ["ls", "find", "wc", "head"])
        if kind == "ls":
            cmd = (f"ls -la {project.root}/{directory}", "List the directory")
            entries = [p.rsplit("/", 1)[-1] for p in project.files if p.startswith(directory)][:60]
            return (*cmd, "total %d\n" % (len(entries) * 8) + "\n".join(
                f"-rw-r--r-- 1 {project.root.split('/')[2]} staff {rng.randint(200, 40_000):6d} "
                f"{pick(rng, ['Mar', 'Apr', 'May', 'Jun', 'Sep', 'Oct'])} {rng.randint(1, 28):2d} 1{rng.randint(0, 2)}:{rng.randint(10, 59)} {e}"
                for e in entries), "", False)
        if kind == "find":
            cmd = (f"find {project.root} -name '*.{EXTENSIONS[project.language]}' | head -50", "Find source files")
            return (*cmd, "\n".join(f"{project.root}/{p}" for p in project.files[:50]), "", False)
        if kind == "wc":
            cmd = (f"wc -l {' '.join(project.files[:6])}", "Count lines")
            sizes = [len(self.files.lines(project, p)) for p in project.files[:6]]
            return (*cmd, "\n".join(f"{s:6d} {p}" for s, p in zip(sizes, project.files[:6])) + f"\n{sum(sizes):6d} total", "", False)
        path = project.path(rng)
        cmd = (f"head -80 {path}", "Show the start of the file")
        return (*cmd, "\n".join(self.files.lines(project, path)[:80]), "", False)

    def _bash_install(self, project: Project) -> tuple[str, str, str, str, bool]:
        rng = self.rng
        cmd = (_command(rng, project, "install"), "Install dependencies")
        lines = [f"Collecting {d}" if project.language == "python" else f"added {rng.randint(1, 900)} packages"
                 for d in project.deps]
        lines += [f"  Downloading {d}-{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}.tar.gz "
                  f"({rng.randint(10, 900)} kB)" for d in project.deps]
        return (*cmd, "\n".join(lines) + f"\nSuccessfully installed {' '.join(project.deps)}", "", False)

    def _bash_run(self, project: Project) -> tuple[str, str, str, str, bool]:
        rng = self.rng
        cmd = (_command(rng, project, "run"), "Run the app")
        target = lognormal(rng, 900, 1.2, 40, 40_000)
        failed = rng.random() < 0.3

        def log_line() -> str:
            return (f"2026-{rng.randint(5, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
                    f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z {pick(rng, ['INFO', 'INFO', 'DEBUG', 'WARNING'])} "
                    f"{project.package}.{pick(rng, project.nouns)} {pick(rng, VERBS)} {pick(rng, project.nouns)} "
                    f"{pick(rng, project.attrs)}={rng.randint(1, 99999)}")

        out = fill_to(target, log_line)
        return (*cmd, out, self._traceback(project) if failed else "", failed)

    def _bash_curl(self, project: Project) -> tuple[str, str, str, str, bool]:
        import json

        rng = self.rng
        noun = pick(rng, project.nouns)
        cmd = (f"curl -s localhost:{pick(rng, [8000, 3000, 8080])}/api/v1/{plural(noun)}?limit=5 | jq .",
                          f"Query the {noun} endpoint")
        items = [{pick(rng, project.attrs): pick(rng, [rng.randint(1, 9999), pick(rng, ADJECTIVES)]),
                  "id": f"{rng.getrandbits(64):016x}", "status": pick(rng, ADJECTIVES),
                  "created_at": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T10:00:00Z"}
                 for _ in range(lognormal(rng, 5, 0.8, 1, 60))]
        return (*cmd, json.dumps({"results": items, "count": len(items), "next": None}, indent=2), "", False)

    def _bash_docker(self, project: Project) -> tuple[str, str, str, str, bool]:
        rng = self.rng
        cmd = ("docker compose ps" if rng.random() < 0.5 else "docker compose logs --tail 40 db",
                          "Check the containers")
        rows = [f"{project.name}-{s}-1   {s}:{rng.randint(1, 16)}   \"docker-entrypoint.s…\"   {s}   "
                f"{rng.randint(1, 50)} minutes ago   Up {rng.randint(1, 50)} minutes   0.0.0.0:{p}->{p}/tcp"
                for s, p in (("db", 5432), ("redis", 6379), ("web", 8000))]
        return (*cmd, "NAME   IMAGE   COMMAND   SERVICE   CREATED   STATUS   PORTS\n" + "\n".join(rows), "", False)

    def _bash_quiet(self, project: Project) -> tuple[str, str, str, str, bool]:
        """Commands that print nothing (or one line) when they work."""
        rng = self.rng
        path = project.path(rng)
        command, out = pick(rng, [
            (f"mkdir -p {project.root}/{path.rsplit('/', 1)[0]}", ""), (f"git add {path}", ""),
            ("cp .env.example .env", ""), ("chmod +x scripts/*.sh", ""), ("rm -rf .pytest_cache dist", ""),
            (f"git checkout -b {project.branches[-1]}", f"Switched to a new branch '{project.branches[-1]}'"),
            ("git stash", f"Saved working directory and index state WIP on main: {rng.getrandbits(28):07x}"),
            (f"export {pick(rng, project.env)}=1", "")])
        return command, pick(rng, ["Create the directory", "Stage the file", "Prepare", "Clean up"]), out, "", False

    def _bash_grep(self, project: Project) -> tuple[str, str, str, str, bool]:
        rng = self.rng
        word = pick(rng, project.functions)
        cmd = (f"rg -n '{word}' {project.root}", f"Find uses of {word}")
        rows = []
        for p in rng.sample(project.files, min(len(project.files), rng.randint(1, 12))):
            lines = self.files.lines(project, p)
            at = rng.randrange(len(lines))
            rows.append(f"{p}:{at + 1}:{lines[at]}")
        return (*cmd, "\n".join(rows), "", False)


@dataclass
class Writer:
    """Prompts and replies of one project's sessions."""
    rng: random.Random
    tools: Tools
    fact_share: float = 0.05
    stated: list[Fact] = field(default_factory=list)

    def prompt(self, project: Project, target: int) -> tuple[str, Fact | None]:
        rng = self.rng
        if target < 40:
            return pick(rng, USER_SHORT), None
        fact = None
        roll = rng.random()
        if roll < self.fact_share:
            fact = pick(rng, project.facts)
            text = pick(rng, ["For the record: {s}.", "Note for later: {s}.", "FYI {s}.",
                               "Remember that {s}."]).format(s=fact.statement)
        elif roll < self.fact_share * 2:
            text = pick(rng, project.facts).question
        else:
            text = sentence(rng, project, USER_ASKS)
        parts = [text]
        size = len(text)
        details = rng.sample(USER_DETAILS, len(USER_DETAILS))[: rng.randint(1, 3)]
        while size < target:
            left = target - size
            if details and (left < 500 or rng.random() < 0.5):
                part = details.pop().format_map(Slots(rng, project))
            elif left > 300 and rng.random() < 0.7:
                pasted = pick(rng, [lambda: self.tools._traceback(project), lambda: code_block(rng, project),
                                     lambda: self.tools._bash_run(project)[2], lambda: self.tools._bash_test(project)[2]])
                part = f"{pick(rng, ['Here is what I see:', 'Output:', 'The log says:', 'This is the code:'])}" \
                       f"\n\n```\n{fill_to(left, pasted)[:left]}\n```"
            else:
                part = "Requirements:\n" + "\n".join(f"- {sentence(rng, project, USER_ASKS)}" for _ in range(rng.randint(2, 6)))
            parts.append(part)
            size += len(part) + 2
        return "\n\n".join(parts) if len(parts) > 2 else " ".join(parts), fact

    def interstitial(self, project: Project) -> str:
        rng = self.rng
        text = sentence(rng, project, ASSISTANT_PLANS)
        if rng.random() < 0.4:
            text = sentence(rng, project, ASSISTANT_FACTS) + " " + text
        return text

    def reply(self, project: Project, target: int) -> tuple[str, Fact | None]:
        rng = self.rng
        fact = pick(rng, project.facts) if rng.random() < self.fact_share else None
        parts = [sentence(rng, project, REPLY_OPENINGS)]
        if fact:
            parts.append(f"Worth knowing: {fact.statement}.")
        size = sum(len(p) for p in parts)
        while size < target - 120:
            roll = rng.random()
            if roll < 0.35:
                part = " ".join(sentence(rng, project, ASSISTANT_FACTS) for _ in range(rng.randint(1, 3)))
            elif roll < 0.6:
                part = "\n".join(sentence(rng, project, REPLY_BULLETS) for _ in range(rng.randint(2, 5)))
            elif roll < 0.85:
                part = f"```{FENCE[project.language]}\n{code_block(rng, project).rstrip()}\n```"
            else:
                part = f"## {pick(rng, ['What changed', 'Why it failed', 'Next steps', 'Root cause'])}"
            parts.append(part)
            size += len(part) + 2
        parts.append(sentence(rng, project, REPLY_CLOSINGS))
        return "\n\n".join(parts), fact

    def compact_summary(self, project: Project, target: int) -> str:
        rng = self.rng
        sections = ["Analysis:", sentence(rng, project, ASSISTANT_FACTS), "", "Summary:",
                    "1. Primary Request and Intent:", "   " + sentence(rng, project, USER_ASKS),
                    "2. Key Technical Concepts:"] + [f"   - {pick(rng, project.classes)}, {pick(rng, project.deps)}"
                                                     for _ in range(4)]
        sections.append("3. Files and Code Sections:")
        body = "\n".join(sections)
        while len(body) < target:
            path = project.path(rng)
            body += (f"\n   - {project.root}/{path}\n     - {sentence(rng, project, ASSISTANT_FACTS)}\n"
                     f"     ```{FENCE[project.language]}\n{code_block(rng, project)}```")
        return COMPACT_OPENING + body + "\n4. Pending Tasks:\n   - " + sentence(rng, project, USER_ASKS)
