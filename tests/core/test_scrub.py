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
from uuid import uuid4

import pytest

from core.scrub import scrub
from tests.support import ROOT

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



def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
SAS = base64.b64encode(RNG.randbytes(32)).decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
JWE = ".".join([b64url(b'{"alg":"RSA-OAEP-256","enc":"A256GCM"}'), b64url(RNG.randbytes(256)), b64url(RNG.randbytes(12)),
                b64url(RNG.randbytes(150)), b64url(RNG.randbytes(16))])
JWT_LINES = textwrap.wrap(jwt(), 50)
KUBE_KEY = base64.b64encode((pem("RSA PRIVATE KEY", 10) + "\n").encode()).decode()
DOCKER_AUTH = base64.b64encode(f"ci-bot:{rand(B62, 20)}".encode()).decode()
SECRET_DATA = base64.b64encode(PASSWORD.encode()).decode()
SERVICE_BUS_KEY = base64.b64encode(RNG.randbytes(32)).decode()
SERVICE_BUS = f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={SERVICE_BUS_KEY}"
SESSION_ID = rand(LOWER_DIGITS, 32)
SENTRY_KEY = rand(HEX, 32)
FERNET = base64.urlsafe_b64encode(bytes([0x80]) + (1_760_000_000).to_bytes(8, "big") + RNG.randbytes(96)).decode()
AWS_SESSION = "IQoJb3JpZ2luX2Vj" + base64.b64encode(RNG.randbytes(300)).decode()

# Added with issue #43: hosted services, signed-token standards, encoded credentials. (type, text, secret)
HOSTED = [
    ("aws-session-token", f"aws_session_token = {AWS_SESSION}", AWS_SESSION),
    ("signed-url", f"curl -O 'https://acme.blob.core.windows.net/exports/a.csv?sv=2022-11-02&sp=r&sig={SAS}'", SAS),
    ("signed-url", f"GET /a.pdf?X-Amz-Date=20260301T100000Z&X-Amz-Signature={rand(HEX, 64)}", None),
    ("azure-client-secret", f"client secret is {rand(B62, 3)}8Q~{rand(B62 + '_~.-', 34)}", None),
    ("azure-storage-key", SERVICE_BUS, SERVICE_BUS_KEY),
    ("google-oauth-secret", f'"client_id": "1234.apps.googleusercontent.com", "x": "GOCSPX-{rand(B64URL, 28)}"', None),
    ("google-oauth-token", f"> Authorization: Bearer ya29.a0A{rand(B64URL, 150)}", None),
    ("alibaba-access-key", f"aliyun configure --access-key-id LTAI5t{rand(B62, 18)}", None),
    ("docker-hub-token", f"docker login -u acme --password-stdin <<< dckr_pat_{rand(B64URL, 27)}", None),
    ("atlassian-token", f"JIRA_API_TOKEN=ATATT3xFfGF0{rand(B64URL, 170)}", None),
    ("terraform-token", f'token = "{rand(B62, 14)}.atlasv1.{rand(B64URL, 67)}"', None),
    ("vault-token", f"> X-Vault-Token: hvs.CAESI{rand(B64URL, 86)}", None),
    ("named-secret", f"> X-Vault-Token: s.{rand(B62, 20)}7Qx4", None),  # a legacy token reads like a dotted name
    ("pulumi-token", f"pulumi login --token pul-{rand(HEX, 40)}", None),
    ("doppler-token", f"use dp.st.prd.{rand(B62, 43)}", None),
    ("databricks-token", f"DATABRICKS_TOKEN=dapi{rand(HEX, 32)}", None),
    ("nuget-key", f"dotnet nuget push pkg.nupkg -k oy2{rand(LOWER_DIGITS, 43)}", None),
    ("rubygems-key", f":rubygems_api_key: rubygems_{rand(HEX, 48)}", None),
    ("grafana-token", f"glsa_{rand(B62, 32)}_{rand(HEX, 8)}", None),
    ("buildkite-token", f"BUILDKITE_API_TOKEN=bkua_{rand(HEX, 40)}", None),
    ("postman-key", f"x-api-key: PMAK-{rand(HEX, 24)}-{rand(HEX, 34)}", None),
    ("dynatrace-token", f"Api-Token dt0c01.{rand(UPPER_DIGITS, 24)}.{rand(UPPER_DIGITS, 64)}", None),
    ("newrelic-key", f"NEW_RELIC_API_KEY=NRAK-{rand(UPPER_DIGITS, 27)}", None),
    ("sentry-dsn", f"sentry_sdk.init(dsn='https://{SENTRY_KEY}@o4505.ingest.sentry.io/45')", SENTRY_KEY),
    ("sentry-token", f"SENTRY_AUTH_TOKEN=sntryu_{rand(HEX, 64)}", None),
    ("supabase-key", f"supabase login --token sbp_{rand(HEX, 40)}", None),
    ("planetscale-token", f"password: pscale_pw_{rand(B64URL, 43)}", None),
    ("render-key", f"RENDER_API_KEY=rnd_{rand(B62, 32)}", None),
    ("netlify-token", f"NETLIFY_AUTH_TOKEN=nfp_{rand(B62, 36)}", None),
    ("fly-token", f"FLY_API_TOKEN=fo1_{rand(B64URL, 43)}", None),
    ("prefect-key", f"prefect cloud login -k pnu_{rand(B62, 36)}", None),
    ("slack-token", f"SLACK_APP_TOKEN=xapp-1-A{rand(UPPER_DIGITS, 10)}-{rand(string.digits, 13)}-{rand(HEX, 64)}", None),
    ("teams-webhook", f"https://acme.webhook.office.com/webhookb2/{uuid4()}@{uuid4()}/IncomingWebhook/{rand(HEX, 32)}/"
                      f"{uuid4()}", None),
    ("linear-key", f"LINEAR_API_KEY=lin_api_{rand(B62, 40)}", None),
    ("notion-token", f"NOTION_TOKEN=ntn_{rand(string.digits, 11)}{rand(B62, 35)}", None),
    ("notion-token", f"Authorization: secret_{rand(B62, 43)}", None),
    ("figma-token", f"X-Figma-Token: figd_{rand(B64URL, 40)}", None),
    ("contentful-token", f"CONTENTFUL_MANAGEMENT_TOKEN=CFPAT-{rand(B64URL, 43)}", None),
    ("airtable-token", f"pat{rand(B62, 14)}.{rand(HEX, 64)}", None),
    ("twitter-bearer", f"AAAAAAAAAAAAAAAAAAAAA{rand(B62, 20)}%3D{rand(B62, 50)}", None),
    ("mapbox-token", f"mapboxgl.accessToken = 'sk.eyJ1IjoiYWNtZSIsImEiOiJ{rand(B64URL, 30)}.{rand(B64URL, 22)}'", None),
    ("stripe-key", f"STRIPE_WEBHOOK_SECRET=whsec_{rand(B62, 32)}", None),
    ("square-token", f"SQUARE_ACCESS_TOKEN=EAAA{rand(B64URL, 60)}", None),
    ("braintree-token", f"access_token$production${rand(LOWER_DIGITS, 16)}${rand(HEX, 32)}", None),
    ("groq-key", f"GROQ_API_KEY=gsk_{rand(B62, 52)}", None),
    ("replicate-token", f"REPLICATE_API_TOKEN=r8_{rand(B62, 37)}", None),
    ("perplexity-key", f"PERPLEXITY_API_KEY=pplx-{rand(B62, 48)}", None),
    ("xai-key", f"XAI_API_KEY=xai-{rand(B62, 80)}", None),
    ("langsmith-key", f"LANGSMITH_API_KEY=lsv2_pt_{rand(HEX, 32)}_{rand(HEX, 10)}", None),
    ("tavily-key", f"TAVILY_API_KEY=tvly-dev-{rand(B62, 32)}", None),
    ("paseto", f"> Authorization: Bearer v4.public.{b64url(RNG.randbytes(120))}", None),
    ("fernet-token", f"token = {FERNET}", FERNET),
    ("jwt", f"id_token: {JWE}", JWE),
    ("jwt", "$ kubectl create token deployer | fold -w 50\n" + "\n".join(JWT_LINES) + "\n$ ", JWT_LINES[-1]),
    ("cookie", f"< set-cookie: sessionid={SESSION_ID}; expires=Sat, 12 Dec 2026 10:00:00 GMT; Path=/", SESSION_ID),
    ("docker-auth", '{"auths": {"ghcr.io": {"auth": "' + DOCKER_AUTH + '"}}}', DOCKER_AUTH),
    ("private-key", f"    client-key-data: {KUBE_KEY}", KUBE_KEY),
    ("k8s-secret-data", f"apiVersion: v1\ndata:\n  db-url: {SECRET_DATA}\nkind: Secret\n", SECRET_DATA),
]
FAMILIES += HOSTED


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
    # issue #43: what the hosted-service and encoded-credential rules must leave alone
    "    certificate-authority-data: " + base64.b64encode(pem("CERTIFICATE", 6).encode()).decode(),
    "< set-cookie: theme=dark; Path=/; SameSite=Lax",
    "document.cookie = `lang=${lang}; path=/`;",
    "kind: ConfigMap\ndata:\n  LOG_LEVEL: info\n  WORKERS: '4'",
    "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey",
    "see the v4.local. and v4.public. purposes in the PASETO spec",
    "pattern_matching_helpers.py and hvs.md and dp.pt.md",
    '"auth": "none", "authType": "oauth2"',
    "https://example.com/search?q=sig&sig=short",
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


def test_a_whole_jwt_at_the_end_of_a_line_leaves_the_next_line_alone() -> None:
    text = f"token: {JWT}\nReceived 200 OK\n{rand(HEX, 40)}\nfinished"
    assert scrub(text).text == "token: [REDACTED:jwt]\nReceived 200 OK\n" + text.split("\n")[2] + "\nfinished"


def test_a_type_closing_a_call_is_code_not_a_secret():
    assert scrub("def token_dict(token: ApiToken) -> dict:").counts == {}
    assert scrub(f"login(password: Hu{rand(B62, 6)}7q)").counts == {"named-secret": 1}  # digits: not a name


def test_pw_in_a_url_is_a_placeholder():
    assert scrub("git@host or https://user:pw@github.com/a/b").counts == {}
    assert scrub(f"https://user:{PASSWORD}@github.com/a/b").counts == {"password-in-url": 1}
