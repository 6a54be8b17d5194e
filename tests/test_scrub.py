"""core.scrub: secrets become [REDACTED:<type>], `<private>` spans become [private], innocent text
stays as it is. The fake secrets are generated here at run time (right prefixes, lengths and
alphabets, random bodies), so this file holds none a scanner could mistake for real ones; the
private tags are built from pieces too, so that this file, captured, keeps its text."""
from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.scrub import scrub

ROOT = Path(__file__).resolve().parent.parent
OPEN, CLOSE = "<" + "private>", "</" + "private>"
RNG = random.Random(2121)
B62 = string.ascii_letters + string.digits
B64URL = B62 + "-_"
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def pem(label: str, lines: int = 8, width: int = 64) -> str:
    body = textwrap.wrap(base64.b64encode(RNG.randbytes(lines * width * 3 // 4)).decode(), width)
    return f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----"


def jwt() -> str:
    part = lambda data: base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")  # noqa: E731
    return ".".join([part({"alg": "HS256", "typ": "JWT"}), part({"sub": "42", "exp": 1900000000}),
                     base64.urlsafe_b64encode(RNG.randbytes(32)).decode().rstrip("=")])


PASSWORD = rand(B62, 10) + "!x" + rand(B62, 6)
GITHUB = "ghp_" + rand(B62, 36)
AWS_ID = "AKIA" + rand(string.ascii_uppercase + "234567", 16)
AWS_SECRET = rand(B62 + "+/", 40)
AZURE_KEY = base64.b64encode(RNG.randbytes(64)).decode()
STRIPE = "sk_live_51" + rand(B62, 97)
OPENAI = "sk-proj-" + rand(B64URL, 74) + "T3BlbkFJ" + rand(B64URL, 74)
ANTHROPIC = "sk-ant-api03-" + rand(B64URL, 93) + "AA"
RSA = pem("RSA PRIVATE KEY", 20)
JWT = jwt()

# (type, text with the secret, the secret)
FAMILIES = [
    ("aws-access-key", f"aws_access_key_id = {AWS_ID}", AWS_ID),
    ("aws-secret-key", f'aws_secret_access_key = "{AWS_SECRET}"', AWS_SECRET),
    ("aws-secret-key", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    ("azure-storage-key", f"DefaultEndpointsProtocol=https;AccountName=prod;AccountKey={AZURE_KEY};"
                          "EndpointSuffix=core.windows.net", AZURE_KEY),
    ("github-token", f"git push https://x-access-token:{GITHUB}@github.com/acme/api.git", GITHUB),
    ("github-token", f"GH_PAT=github_pat_11{rand(B62, 20)}_{rand(B62, 59)}", None),
    ("github-token", f"token: ghs_{rand(B62, 36)}", None),
    ("gitlab-token", f"GITLAB_TOKEN=glpat-{rand(B64URL, 20)}", None),
    ("npm-token", f"//registry.npmjs.org/:_authToken=npm_{rand(B62, 36)}", None),
    ("pypi-token", f"password = pypi-AgEIcHlwaS5vcmc{rand(B64URL, 120)}", None),
    ("slack-webhook", f"curl -X POST https://hooks.slack.com/services/T{rand(string.ascii_uppercase, 8)}/"
                      f"B{rand(string.ascii_uppercase, 8)}/{rand(B62, 24)}", None),
    ("slack-token", f"SLACK_BOT_TOKEN=xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(B62, 24)}", None),
    ("discord-webhook", f"https://discord.com/api/webhooks/{rand(string.digits, 19)}/{rand(B64URL, 68)}", None),
    ("telegram-token", f"bot = Bot('{RNG.randint(10**8, 10**9)}:AA{rand(B64URL, 33)}')", None),
    ("stripe-key", f"STRIPE_SECRET_KEY={STRIPE}", STRIPE),
    ("stripe-key", f"Stripe.api_key = 'sk_test_51{rand(B62, 97)}'", None),
    ("stripe-key", f"key: rk_live_51{rand(B62, 97)}", None),
    ("openai-key", f"OPENAI_API_KEY={OPENAI}", OPENAI),
    ("openai-key", f"I'm getting a 401 with sk-{rand(B62, 20)}T3BlbkFJ{rand(B62, 20)}", None),
    ("anthropic-key", f"client = Anthropic(api_key='{ANTHROPIC}')", ANTHROPIC),
    ("google-api-key", f"GEMINI_API_KEY=AIza{rand(B64URL, 35)}", None),
    ("huggingface-token", f"huggingface-cli login --token hf_{rand(string.ascii_letters, 34)}", None),
    ("private-key", f"$ cat ~/.ssh/id_rsa\n{RSA}\n$ ls", RSA),
    ("private-key", pem("EC PRIVATE KEY", 3), None),
    ("private-key", pem("OPENSSH PRIVATE KEY", 6, 70), None),
    ("jwt", f"Cookie: session={JWT}", JWT),
    ("password-in-url", f"DATABASE_URL=postgresql://app:{PASSWORD}@db.internal:5432/app", PASSWORD),
    ("password-in-url", f"mysql://root:{PASSWORD}@10.0.0.3:3306/shop", PASSWORD),
    ("password-in-url", f"mongodb+srv://app:{PASSWORD}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true", PASSWORD),
    ("password-in-url", f"redis://default:{PASSWORD}@cache:6379/0", PASSWORD),
    ("password-in-url", f"amqp://guest:{PASSWORD}@rabbit:5672/vhost", PASSWORD),
    ("dotenv-secret", f"DB_PASSWORD={PASSWORD}", PASSWORD),
    ("dotenv-secret", f'DD_API_KEY="{rand(HEX, 32)}"', None),
    ("dotenv-secret", f"      - TWILIO_AUTH_TOKEN={rand(HEX, 32)}", None),
    ("named-secret", f'{{"client_secret": "{PASSWORD}", "expires_in": 3600}}', PASSWORD),
    ("named-secret", f'SECRET = os.environ.get("DJANGO_SECRET_KEY", "{PASSWORD}")', PASSWORD),
    ("named-secret", f"<password>{PASSWORD}</password>", PASSWORD),
    ("twilio-key", f"TWILIO_API_KEY=SK{rand(HEX, 32)}", None),
    ("sendgrid-key", f"SG.{rand(B64URL, 22)}.{rand(B64URL, 43)}", None),
    ("mailgun-key", f"api_key: key-{rand(HEX, 32)}", None),
    ("heroku-key", f"HEROKU_API_KEY=HRKU-AA{rand(B64URL, 58)}", None),
    ("digitalocean-token", f"doctl auth init -t dop_v1_{rand(HEX, 64)}", None),
    ("shopify-token", f"X-Shopify-Access-Token: shpat_{rand(HEX, 32)}", None),
    ("winni-token", f"WINNI_TOKEN=winni_{rand(B64URL, 40)}Ab3", None),
    ("bearer-token", f"> Authorization: Bearer {rand(B64URL, 40)}", None),
    ("password", f"curl -u deploy:{PASSWORD} https://ci.acme.io/api", PASSWORD),
    ("password", f"mysql -h db -u app -p'{PASSWORD}' shop", PASSWORD),
    ("password", f"db.internal:5432:shop:app:{PASSWORD}", PASSWORD),
]


def _secret_of(text: str, given: str | None) -> str:
    """The secret in a case: given, or the last token of the text (all token-shaped cases end in it)."""
    return given or text.replace("'", " ").replace(")", " ").split()[-1].split("/")[-1].split("=")[-1]


@pytest.mark.parametrize("kind,text,secret", FAMILIES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(FAMILIES)])
def test_each_format_family_is_redacted_with_its_type(kind: str, text: str, secret: str | None) -> None:
    secret = _secret_of(text, secret)
    assert secret in text
    result = scrub(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert result.counts == {kind: 1}
    assert result.redacted == 1


def test_a_url_keeps_its_user_and_host_and_loses_the_password() -> None:
    result = scrub(f"psql postgres://reporting:{PASSWORD}@db.internal:5432/app?sslmode=require")
    assert result.text == "psql postgres://reporting:[REDACTED:password-in-url]@db.internal:5432/app?sslmode=require"


def test_a_pem_block_goes_whole_in_every_wrapping() -> None:
    escaped = RSA.replace("\n", "\\n")
    indented = "  tls.key: |\n" + textwrap.indent(RSA, "    ")
    truncated = RSA[: len(RSA) // 2]  # a paste cut off before its END line
    for text in (f"before\n{RSA}\nafter", f'{{"private_key": "{escaped}\\n", "type": "x"}}', indented, truncated):
        result = scrub(text)
        assert result.counts == {"private-key": 1}, text[:60]
        for line in RSA.splitlines()[1:-1]:
            assert line not in result.text.replace("\\n", "\n")
    assert scrub(f"before\n{RSA}\nafter").text == "before\n[REDACTED:private-key]\nafter"
    encrypted = RSA.replace("KEY-----\n", "KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
                            + rand(HEX, 32).upper() + "\n\n", 1)
    assert scrub(f"x\n{encrypted}\ny").text == "x\n[REDACTED:private-key]\ny"
    body = lambda n: "\n".join(textwrap.wrap(base64.b64encode(RNG.randbytes(n)).decode(), 64))  # noqa: E731
    pgp = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body(500)}\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----"
    putty = (f"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key\nPublic-Lines: 6\n{body(270)}\n"
             f"Private-Lines: 14\n{body(600)}\nPrivate-MAC: {rand(HEX, 40)}")
    for key in (pgp, putty):
        assert scrub(f"$ cat key\n{key}\n$ ls").text == "$ cat key\n[REDACTED:private-key]\n$ ls"


def test_counts_say_how_many_of_each_type() -> None:
    other = "ghp_" + rand(B62, 36)
    text = f"GITHUB_TOKEN={GITHUB}\nGH_TOKEN={other}\nDATABASE_URL=postgres://app:{PASSWORD}@db/app\n"
    result = scrub(text)
    assert result.counts == {"github-token": 2, "password-in-url": 1}
    assert result.redacted == 3
    assert result.text == ("GITHUB_TOKEN=[REDACTED:github-token]\nGH_TOKEN=[REDACTED:github-token]\n"
                           "DATABASE_URL=postgres://app:[REDACTED:password-in-url]@db/app\n")


def test_scrubbing_scrubbed_text_changes_nothing() -> None:
    sample = "\n".join(text for _, text, _ in FAMILIES) + f"\nsay {OPEN}hidden{CLOSE} hi"
    once = scrub(sample)
    assert once.redacted == len(FAMILIES) and once.private == 1
    twice = scrub(once.text)
    assert twice.text == once.text
    assert twice.counts == {} and twice.private == 0


def test_private_spans_are_dropped_before_secrets_are_looked_for() -> None:
    text = f"deploy with {OPEN.title()}\nthe key is {GITHUB}\n{CLOSE.upper()} and then {OPEN}two{CLOSE}."
    result = scrub(text)
    assert result.text == "deploy with [private] and then [private]."
    assert result.private == 2 and result.counts == {}


def test_private_nesting_unclosed_and_stray_tags() -> None:
    assert scrub(f"a {OPEN}b {OPEN}c{CLOSE} d{CLOSE} e").text == "a [private] e"
    assert scrub(f"keep this {OPEN}but not\nanything after an unclosed tag").text == "keep this [private]"
    assert scrub(f"a stray {CLOSE} closing tag stays").text == f"a stray {CLOSE} closing tag stays"
    assert scrub("no tags at all").private == 0
    mention = "Wrap it in `<private>` tags, e.g. `<private>my key</private>`; the rest stays."
    assert scrub(mention).text == mention


def test_disabled_scrubbing_keeps_secrets_but_still_drops_private_spans() -> None:
    result = scrub(f"GITHUB_TOKEN={GITHUB} {OPEN}x{CLOSE}", enabled=False)
    assert result.text == f"GITHUB_TOKEN={GITHUB} [private]"
    assert result.counts == {} and result.private == 1


INNOCENT = [
    "commit 3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345\nAuthor: Dev <dev@acme.io>",
    "request_id=6c661584-9f8e-5e0b-c13c-c77be532b2ee GET /v1/invoices 200",
    "echo " + base64.b64encode(b"The quick brown fox jumps over the lazy dog, twice over.").decode(),
    '"integrity": "sha512-' + base64.b64encode(RNG.randbytes(64)).decode() + '",',
    'files = [{file = "pkg-1.0.tar.gz", hash = "sha256:' + rand(HEX, 64) + '"}]',
    "image: postgres@sha256:" + rand(HEX, 64),
    "password = get_password()",
    "token_count=1234",
    "max_tokens: 4096",
    "API_KEY=${API_KEY}",
    "DATABASE_URL=postgresql://winni:${POSTGRES_PASSWORD:-winni}@db:5432/winni",
    "the sk-learn docs say task-runner is fine; use a risk-based approach",
    "PASSWORD_MIN_LENGTH=12\nSECRET_KEY_FALLBACKS=\nTOKEN_TTL=3600",
    'sort_key = "created_at"\ncache_key = "conv:42:summary"\nprimary_key=True',
    'HEARTBEAT_KEY = "winni:worker:heartbeat"',
    "WRITE_LOCK_KEY = 0x57_494E_4E49_4358",
    r'PATTERN = re.compile(r"(?P<password>\S{1,256})$")',
    "STRIPE_PUBLISHABLE_KEY=pk_test_" + rand(B62, 24),
    "def login(username: str, password: str) -> bool:",
    "ALTER TABLE users ADD COLUMN password VARCHAR(255) NOT NULL;",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.acme.io",
    "Connect with postgres://user:password@localhost:5432/app (replace the placeholders).",
    "The file starts with -----BEGIN RSA PRIVATE KEY----- and you must never paste it.",
    "-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(RNG.randbytes(270)).decode() + "\n-----END PUBLIC KEY-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rand(B62, 43) + " dev@laptop",
    "data:image/png;base64," + base64.b64encode(RNG.randbytes(300)).decode(),
    "I told Melanie the password to the wifi is on the fridge.",
    "toolskey = 'VS%0.f0COMNTOOLS' % version",
    "SECRET_KEY_FILE=/run/secrets/django_secret_key",
]


@pytest.mark.parametrize("text", INNOCENT)
def test_innocent_text_is_left_alone(text: str) -> None:
    result = scrub(text)
    assert result.counts == {}
    assert result.text == text


@pytest.mark.parametrize("value", [
    b"GITHUB_TOKEN=" + GITHUB.encode() + b"\xff\xfe\x00binary",
    None, 12345, "", "\x00" * 100, "\ud800 lone surrogate " + GITHUB, "é" * 10 + GITHUB + "ü",
    "x" * 300_000 + " " + GITHUB,
])
def test_odd_input_never_raises(value: object) -> None:
    result = scrub(value)
    assert isinstance(result.text, str)
    assert GITHUB not in result.text


def test_positions_survive_non_ascii_text() -> None:
    text = "İstanbul ß ﬁ " * 20 + f"\nDB_PASSWORD={PASSWORD} ok"
    assert scrub(text).text == "İstanbul ß ﬁ " * 20 + "\nDB_PASSWORD=[REDACTED:dotenv-secret] ok"


def test_adversarial_megabyte_inputs_finish() -> None:
    """Long runs of every pattern's prefix: with an unbounded repetition before a required suffix
    (as in detect-secrets' own OpenAI and JWT patterns) these take minutes; bounded, seconds."""
    program = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from core.scrub import scrub
        for unit in ("sk-1-", "eyJ1-", "eyJhbGciOi.", "//x/", "://a:", "token=", "key=", "password: A1 ",
                     "AKIA", "ghp_", "xoxb-1-", "7", "a", "0123456789abcdef", "<" "private> ", "<password>",
                     "-----BEGIN RSA PRIVATE KEY-----\\n", "Authorization: Bearer ", "mysql -p ", "a:1:b:c:\\n"):
            scrub((unit * (1_000_000 // len(unit) + 1))[:1_000_000])
        print("done")
    """)
    finished = subprocess.run([sys.executable, "-c", program, str(ROOT)], capture_output=True, text=True,
                              timeout=600)
    assert finished.stdout.strip() == "done", finished.stderr[-2000:]


def test_a_type_closing_a_call_is_code_not_a_secret():
    assert scrub("def token_dict(token: ApiToken) -> dict:").counts == {}
    assert scrub(f"login(password: Hu{rand(B62, 6)}7q)").counts == {"named-secret": 1}  # digits: not a name


def test_pw_in_a_url_is_a_placeholder():
    assert scrub("git@host or https://user:pw@github.com/a/b").counts == {}
    assert scrub(f"https://user:{PASSWORD}@github.com/a/b").counts == {"password-in-url": 1}
