"""Planted secrets for the scrubbing benchmark: fake credentials of 108 formats with realistic
bodies (right prefixes, lengths and alphabets; random, so never a real secret) embedded in the
tool outputs an agent really sees: 29 carriers (`cat .env`, `printenv`, shell history,
docker-compose, Django settings, YAML / TOML / INI / JSON config, `docker inspect`, application
logs, Python and Node stack traces, `kubectl get secret -o yaml` (base64 `data:` and the
last-applied annotation), kubeconfig, ~/.docker/config.json, ~/.aws/credentials, .npmrc, .pypirc,
`git remote -v`, `curl -v` headers and Set-Cookie, PEM files, keys in code, a GCP service-account
file, terminals that fold long lines, tokens concatenated over lines, pasted prompts).

The first 43 formats (cloud keys, VCS/CI and registry tokens, chat webhooks, payment and LLM
keys, PEM keys, JWTs, URL passwords, .env values) date from issue 21; issue #43 added 65 more:
hosted services' prefixed credentials (Azure AD secrets and SAS URLs, S3 pre-signed URLs, Google
OAuth, Alibaba, GitLab deploy/runner, Docker Hub, Atlassian, Bitbucket, Terraform Cloud, Vault,
Pulumi, Doppler, Databricks, NuGet, RubyGems, Grafana, Buildkite, Postman, Dynatrace, New Relic,
Sentry, Supabase, PlanetScale, Render, Netlify, Fly, Prefect, Slack app/user, Teams, Discord
bot, Stripe webhook, Square, Braintree, Mailchimp, Groq, Replicate, Perplexity, xAI, LangSmith,
Tavily, OpenRouter, Linear, Notion, Figma, Contentful, Airtable, X/Twitter, Mapbox, age), signed
and encrypted token standards (JWE, PASETO, Fernet, a JWT cut over lines), PGP private keys,
kubeconfig client keys, Docker config auths, session cookies and SQL Server connection strings.

`planted_documents(seed, per_format)` gives documents with the planted secrets and the part of
each that must not survive scrubbing (its "material": a URL keeps its user and host; a Secret's
`data:` holds the value base64-encoded, which must go too); `held_out_documents` plants them in 15
other syntaxes; `tool_output(rng, size)` gives ordinary tool output (no secrets) for the cost
measurement. Pure standard library, deterministic per seed.
"""
from __future__ import annotations

import base64
import json
import random
import string
import textwrap
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent

B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
B64URL = B62 + "-_"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
BASE32 = string.ascii_uppercase + "234567"


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@dataclass(frozen=True)
class Secret:
    value: str               # what is written into the document
    material: tuple[str, ...]  # the parts that must not survive (a URL keeps user and host)


@dataclass(frozen=True)
class Format:
    name: str
    family: str
    kind: str                  # the [REDACTED:<kind>] Winni should write
    make: Callable[[random.Random], Secret]
    names: tuple[str, ...]     # variable names it naturally lives under
    contexts: tuple[str, ...]  # which documents it can be planted in


def token(value: str) -> Secret:
    return Secret(value, (value,))


# ---- the formats -----------------------------------------------------------------------------

def aws_access_key(rng):
    return token(rng.choice(["AKIA", "AKIA", "ASIA"]) + pick(rng, BASE32, 16))


def aws_secret_key(rng):
    return token(pick(rng, B64, 40))


def aws_session_token(rng):
    return token("IQoJb3JpZ2luX2Vj" + base64.b64encode(rng.randbytes(rng.randint(500, 700))).decode())


def azure_storage_key(rng):
    return token(base64.b64encode(rng.randbytes(64)).decode())  # 88 characters ending in ==


def azure_connection_string(rng):
    key = base64.b64encode(rng.randbytes(64)).decode()
    account = rng.choice(["prodassets", "stdatalake01", "webbackups", "mlartifacts"])
    return Secret(f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key};"
                  "EndpointSuffix=core.windows.net", (key,))


def github_classic(rng):
    return token("ghp_" + pick(rng, B62, 36))


def github_fine_grained(rng):
    return token("github_pat_11" + pick(rng, UPPER_DIGITS, 20) + "_" + pick(rng, B62, 59))


def github_app(rng):
    return token(rng.choice(["ghs_", "ghu_", "gho_", "ghr_"]) + pick(rng, B62, 36))


def gitlab_pat(rng):
    return token("glpat-" + pick(rng, B64URL, 20))


def npm_token(rng):
    return token("npm_" + pick(rng, B62, 36))


def pypi_token(rng):
    return token("pypi-AgEIcHlwaS5vcmc" + b64url(rng.randbytes(rng.randint(90, 140))))


def slack_webhook(rng):
    secret = pick(rng, B62, 24)
    return Secret(f"https://hooks.slack.com/services/T{pick(rng, UPPER_DIGITS, rng.choice([8, 10]))}/"
                  f"B{pick(rng, UPPER_DIGITS, rng.choice([8, 10]))}/{secret}", (secret,))


def slack_bot_token(rng):
    return token(f"xoxb-{pick(rng, string.digits, 12)}-{pick(rng, string.digits, 13)}-{pick(rng, B62, 24)}")


def discord_webhook(rng):
    secret = pick(rng, B64URL, 68)
    host = rng.choice(["discord.com", "discordapp.com"])
    return Secret(f"https://{host}/api/webhooks/{pick(rng, string.digits, 19)}/{secret}", (secret,))


def stripe_live(rng):
    return token(rng.choice(["sk_live_51", "sk_live_51"]) + pick(rng, B62, 97))


def stripe_test(rng):
    return token("sk_test_51" + pick(rng, B62, 97))


def stripe_restricted(rng):
    return token(rng.choice(["rk_live_51", "rk_test_51"]) + pick(rng, B62, 97))


def openai_key(rng):
    marker = "T3BlbkFJ"
    style = rng.choice(["proj", "proj", "svcacct", "legacy"])
    if style == "legacy":
        return token("sk-" + pick(rng, B62, 20) + marker + pick(rng, B62, 20))
    return token(f"sk-{style}-" + pick(rng, B64URL, 74) + marker + pick(rng, B64URL, 74))


def anthropic_key(rng):
    prefix = rng.choice(["sk-ant-api03-", "sk-ant-api03-", "sk-ant-admin01-"])
    return token(prefix + pick(rng, B64URL, 93) + "AA")


def google_api_key(rng):
    return token("AIza" + pick(rng, B64URL, 35))


def huggingface_token(rng):
    return token("hf_" + pick(rng, string.ascii_letters, 34))


def _pem(rng, label: str, head: str, body_bytes: int, width: int = 64) -> tuple[str, list[str]]:
    body = head + base64.b64encode(rng.randbytes(body_bytes)).decode()
    lines = textwrap.wrap(body, width)
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----", lines


def pem_key(rng):
    label, head, size, width = rng.choice([
        ("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 1180, 64),
        ("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 1190, 64),
        ("EC PRIVATE KEY", "MHcCAQEEI", 110, 64),
        ("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", 300, 70),
        ("ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", 1230, 64),
    ])
    text, lines = _pem(rng, label, head, size, width)
    return Secret(text, tuple(line for line in lines[1:]))  # the first line is a well-known header


def gcp_service_account(rng):
    """The whole `cat key.json` of a service account: the PEM sits in a JSON string with \\n escapes."""
    text, lines = _pem(rng, "PRIVATE KEY", "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ", 1190)
    project = rng.choice(["acme-prod-4821", "data-pipeline-dev", "ml-serving-319204"])
    body = {
        "type": "service_account", "project_id": project, "private_key_id": pick(rng, HEX, 40),
        "private_key": text + "\n", "client_email": f"deployer@{project}.iam.gserviceaccount.com",
        "client_id": pick(rng, string.digits, 21), "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/deployer%40{project}.iam.gserviceaccount.com",
        "universe_domain": "googleapis.com",
    }
    return Secret(json.dumps(body, indent=2), tuple(lines[1:]))


def jwt(rng):
    alg = rng.choice(["HS256", "RS256", "ES256"])
    header = {"alg": alg, "typ": "JWT"} if rng.random() < 0.7 else {"alg": alg, "kid": pick(rng, HEX, 16), "typ": "JWT"}
    now = rng.randint(1_700_000_000, 1_760_000_000)
    payload = {"sub": str(uuid.UUID(int=rng.getrandbits(128))), "iat": now, "exp": now + 3600,
               "iss": rng.choice(["https://auth.example.com/", "https://login.acme.io", "supabase"]),
               "role": rng.choice(["authenticated", "admin", "service_role"])}
    signature = rng.randbytes({"HS256": 32, "RS256": 256, "ES256": 64}[alg])
    parts = [b64url(json.dumps(header, separators=(",", ":")).encode()),
             b64url(json.dumps(payload, separators=(",", ":")).encode()), b64url(signature)]
    value = ".".join(parts)
    return Secret(value, (parts[1] + "." + parts[2],))


PASSWORD_ALPHABET = B62 + "!*-_.~"


def url_password(rng) -> str:
    if rng.random() < 0.2:  # human-made passwords
        return (rng.choice(["Summer", "Winter", "Kangaroo", "Blue", "Falcon"]) + pick(rng, string.digits, 4)
                + rng.choice(["!", "*", "%40", ""]) + pick(rng, B62, 4))
    return pick(rng, PASSWORD_ALPHABET, rng.randint(12, 32))


def _db_url(scheme: str, port: int, user: str | None = None, path: str = "/app"):
    def make(rng):
        password = url_password(rng)
        host = rng.choice(["db.internal", "10.0.3.17", "prod-db.cluster-c9x2k.eu-west-1.rds.amazonaws.com",
                           "localhost", "cache-01.acme.local"])
        login = user if user is not None else rng.choice(["app", "admin", "deploy", "svc_reporting"])
        return Secret(f"{scheme}://{login}:{password}@{host}:{port}{path}", (password,))
    return make


def mongodb_srv(rng):
    password = url_password(rng)
    return Secret(f"mongodb+srv://app:{password}@cluster0.{pick(rng, string.ascii_lowercase + string.digits, 5)}"
                  ".mongodb.net/prod?retryWrites=true&w=majority", (password,))


def https_basic_auth(rng):
    password = url_password(rng)
    return Secret(f"https://ci-bot:{password}@artifacts.acme.io/repository/pypi/simple", (password,))


def generic_password(rng):
    return token(rng.choice([
        pick(rng, PASSWORD_ALPHABET, rng.randint(14, 28)),
        rng.choice(["Tr0ub4dor", "Correct-Horse", "Gr33nTea", "Mango"]) + pick(rng, B62, 5) + rng.choice(["!", "#", "?", ""]),
    ]))


def django_secret_key(rng):
    body = pick(rng, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)", 50)
    return token(rng.choice(["django-insecure-", ""]) + body)


def datadog_key(rng):
    return token(pick(rng, HEX, rng.choice([32, 40])))


def twilio_api_key(rng):
    return token("SK" + pick(rng, HEX, 32))


def twilio_auth_token(rng):
    return token(pick(rng, HEX, 32))


def sendgrid_key(rng):
    return token("SG." + pick(rng, B64URL, 22) + "." + pick(rng, B64URL, 43))


def mailgun_key(rng):
    if rng.random() < 0.5:
        return token("key-" + pick(rng, HEX, 32))
    return token(f"{pick(rng, HEX, 32)}-{pick(rng, HEX, 8)}-{pick(rng, HEX, 8)}")


def heroku_key(rng):
    return token("HRKU-AA" + pick(rng, B64URL, 58))


def digitalocean_token(rng):
    return token(rng.choice(["dop_v1_", "doo_v1_", "dor_v1_"]) + pick(rng, HEX, 64))


def telegram_token(rng):
    return token(f"{rng.randint(10**8, 10**10 - 1)}:AA{pick(rng, B64URL, 33)}")


def shopify_token(rng):
    return token(rng.choice(["shpat_", "shpss_", "shpca_"]) + pick(rng, HEX, 32))


def winni_token(rng):
    return token("winni_" + pick(rng, B64URL, 43))


def bearer_opaque(rng):
    return token(pick(rng, B64URL, rng.choice([32, 40, 64])))


# Added with issue #43: hosted services' credentials and signed-token standards.

LOWER_DIGITS = string.ascii_lowercase + string.digits


def prefixed(prefix: str | tuple[str, ...], alphabet: str, n: int, suffix: Callable[[random.Random], str] | None = None):
    """A token of `prefix` + `n` characters of `alphabet` (+ `suffix(rng)`)."""
    def make(rng):
        head = prefix if isinstance(prefix, str) else rng.choice(prefix)
        return token(head + pick(rng, alphabet, n) + (suffix(rng) if suffix else ""))
    return make


def azure_sas_url(rng):
    sig = base64.b64encode(rng.randbytes(32)).decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    account = rng.choice(["prodassets", "stdatalake01", "webbackups"])
    return Secret(f"https://{account}.blob.core.windows.net/exports/2026-03.csv?sv=2022-11-02&ss=b&srt=co&sp=rl"
                  f"&se=2026-12-31T23:59:59Z&st=2026-03-01T00:00:00Z&spr=https&sig={sig}", (sig,))


def azure_client_secret(rng):
    return token(pick(rng, B62, 3) + rng.choice(string.digits) + "Q~" + pick(rng, B62 + "_~.-", 34))


def azure_service_bus(rng):
    key = base64.b64encode(rng.randbytes(32)).decode()
    return Secret(f"Endpoint=sb://acme-{rng.choice(['prod', 'events'])}.servicebus.windows.net/;"
                  f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}", (key,))


def aws_presigned_url(rng):
    signature = pick(rng, HEX, 64)
    return Secret(f"https://acme-prod-uploads.s3.eu-west-1.amazonaws.com/invoices/2026/03.pdf?X-Amz-Algorithm="
                  f"AWS4-HMAC-SHA256&X-Amz-Credential=AKIA{pick(rng, BASE32, 16)}%2F20260301%2Feu-west-1%2Fs3%2F"
                  f"aws4_request&X-Amz-Date=20260301T100000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
                  f"&X-Amz-Signature={signature}", (signature,))


def gitlab_other(rng):
    prefix = rng.choice(["gldt-", "glrt-", "glptt-", "glcbt-64_"])
    return token(prefix + (pick(rng, HEX, 40) if prefix == "glptt-" else pick(rng, B64URL, rng.choice([20, 26]))))


def terraform_token(rng):
    return token(pick(rng, B62, 14) + ".atlasv1." + pick(rng, B64URL, 67))


def vault_token(rng):
    return token(rng.choice(["hvs.CAESI", "hvs.CAESI", "hvb.AAAAAQ"]) + pick(rng, B64URL, rng.choice([86, 130])))


def sentry_dsn(rng):
    key = pick(rng, HEX, 32)
    return Secret(f"https://{key}@o{rng.randint(10**5, 10**7)}.ingest.{rng.choice(['', 'us.', 'de.'])}sentry.io/"
                  f"{rng.randint(10**15, 10**16)}", (key,))


def slack_app_token(rng):
    return token(f"xapp-1-A{pick(rng, UPPER_DIGITS, 10)}-{pick(rng, string.digits, 13)}-{pick(rng, HEX, 64)}")


def slack_user_token(rng):
    return token(f"xoxp-{pick(rng, string.digits, 12)}-{pick(rng, string.digits, 12)}-{pick(rng, string.digits, 13)}-"
                 f"{pick(rng, HEX, 32)}")


def teams_webhook(rng):
    secret = pick(rng, HEX, 32)
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(3)]
    return Secret(f"https://acme.webhook.office.com/webhookb2/{ids[0]}@{ids[1]}/IncomingWebhook/{secret}/{ids[2]}",
                  (secret,))


def discord_bot_token(rng):
    user_id = str(rng.randint(10**17, 10**18))
    return token(b64url(user_id.encode()) + "." + pick(rng, B64URL, 6) + "." + pick(rng, B64URL, 27))


def braintree_token(rng):
    secret = f"{pick(rng, LOWER_DIGITS, 16)}${pick(rng, HEX, 32)}"
    return Secret(f"access_token$production${secret}", (secret,))


def mailchimp_key(rng):
    return token(f"{pick(rng, HEX, 32)}-us{rng.randint(1, 21)}")


def langsmith_key(rng):
    return token(f"lsv2_{rng.choice(['pt', 'sk'])}_{pick(rng, HEX, 32)}_{pick(rng, HEX, 10)}")


def mapbox_token(rng):
    return token("sk.eyJ1IjoiYWNtZSIsImEiOiJ" + pick(rng, B64URL, 30) + "." + pick(rng, B64URL, 22))


def twitter_bearer(rng):
    return token("AAAAAAAAAAAAAAAAAAAAA" + pick(rng, B62, 20) + "%3D" + pick(rng, B62, 50))


def jwe(rng):
    header = {"alg": rng.choice(["RSA-OAEP-256", "dir", "ECDH-ES+A256KW"]), "enc": rng.choice(["A256GCM", "A128CBC-HS256"])}
    key = b"" if header["alg"] == "dir" else rng.randbytes(256 if header["alg"].startswith("RSA") else 40)
    parts = [b64url(json.dumps(header, separators=(",", ":")).encode()), b64url(key), b64url(rng.randbytes(12)),
             b64url(rng.randbytes(rng.randint(120, 400))), b64url(rng.randbytes(16))]
    return Secret(".".join(parts), (parts[3],))


def paseto(rng):
    version, purpose = rng.choice([("v4", "public"), ("v4", "local"), ("v2", "local"), ("v3", "public")])
    body = b64url(rng.randbytes(rng.randint(90, 180)))
    footer = "." + b64url(json.dumps({"kid": pick(rng, B62, 12)}).encode()) if rng.random() < 0.3 else ""
    return token(f"{version}.{purpose}.{body}{footer}")


def fernet(rng):
    raw = b"\x80" + rng.randint(1_700_000_000, 1_800_000_000).to_bytes(8, "big") + rng.randbytes(16 + 16 * rng.randint(1, 6) + 32)
    return token(base64.urlsafe_b64encode(raw).decode())


def jwt_wrapped(rng):
    value = jwt(rng).value
    return Secret(value, (value.split(".", 1)[1],))


def pgp_private_key(rng):
    body = base64.b64encode(rng.randbytes(rng.choice([900, 1800]))).decode()
    lines = textwrap.wrap(body, 64)
    checksum = "=" + base64.b64encode(rng.randbytes(3)).decode()
    text = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(lines) + f"\n{checksum}\n"
            "-----END PGP PRIVATE KEY BLOCK-----")
    return Secret(text, tuple(lines[1:]))


def kube_client_key(rng):
    text, _ = _pem(rng, "RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 1180)
    value = base64.b64encode((text + "\n").encode()).decode()
    return Secret(value, (value[64:],))  # its first 48 bytes are the well-known BEGIN line


def docker_auth(rng):
    user = rng.choice(["ci-bot", "deploy", "acme"])
    return token(base64.b64encode(f"{user}:{rng.choice([pick(rng, PASSWORD_ALPHABET, 20), 'dckr_pat_' + pick(rng, B64URL, 27)])}".encode()).decode())


def session_cookie(rng):
    return token(rng.choice([
        pick(rng, LOWER_DIGITS, 32),  # Django sessionid
        pick(rng, LOWER_DIGITS, 26),  # PHPSESSID
        "s%3A" + pick(rng, B64URL, 32) + "." + pick(rng, B62 + "%", 43),  # Express connect.sid
        pick(rng, B62 + "%", 120) + "--" + pick(rng, HEX, 40),  # Rails cookie store
        pick(rng, string.ascii_uppercase + string.digits, 32),  # JSESSIONID
    ]))


def sqlserver_connection(rng):
    password = url_password(rng).replace("%40", "@")
    return Secret(f"Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog=billing;User ID=app;"
                  f"Password={password};Encrypt=True;Connection Timeout=30;", (password,))



# The carriers a format can be planted in: a self-identifying token (SHAPED) anywhere, also in a
# pasted prompt; a value only its variable's name gives away (UNSHAPED) where it has one; a URL
# anywhere but in a Kubernetes Secret's base64 `data:`.
CONFIGS = ("dotenv", "printenv", "shell_history", "compose", "settings_py", "yaml_config", "json_response",
           "toml_file", "ini_config", "docker_inspect")
ENVISH = CONFIGS + ("log_lines", "stack_trace", "js_stack_trace", "k8s_secret", "kubectl_secret")
SHAPED = ENVISH + ("prompt",)
URLISH = CONFIGS + ("stack_trace", "js_stack_trace", "log_lines", "prompt")
UNSHAPED = CONFIGS + ("k8s_secret", "kubectl_secret", "js_stack_trace")

FORMATS: tuple[Format, ...] = (
    Format("aws-access-key-id", "cloud", "aws-access-key", aws_access_key,
           ("AWS_ACCESS_KEY_ID", "aws_access_key_id"), SHAPED + ("aws_credentials",)),
    Format("aws-secret-access-key", "cloud", "aws-secret-key", aws_secret_key,
           ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key", "SecretAccessKey"), UNSHAPED + ("aws_credentials",)),
    Format("aws-session-token", "cloud", "aws-session-token", aws_session_token,
           ("AWS_SESSION_TOKEN", "aws_session_token", "SessionToken"), SHAPED + ("aws_credentials",)),
    Format("gcp-service-account-json", "cloud", "private-key", gcp_service_account, ("",), ("gcp_json",)),
    Format("azure-storage-key", "cloud", "azure-storage-key", azure_storage_key,
           ("AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY"), UNSHAPED),
    Format("azure-connection-string", "cloud", "azure-storage-key", azure_connection_string,
           ("AZURE_STORAGE_CONNECTION_STRING", "AzureWebJobsStorage"), SHAPED),
    Format("github-classic-pat", "vcs-ci", "github-token", github_classic, ("GITHUB_TOKEN", "GH_TOKEN"),
           SHAPED + ("git_remote",)),
    Format("github-fine-grained-pat", "vcs-ci", "github-token", github_fine_grained, ("GITHUB_TOKEN", "GH_PAT"),
           SHAPED + ("git_remote",)),
    Format("github-app-token", "vcs-ci", "github-token", github_app, ("GITHUB_TOKEN", "GH_APP_TOKEN"),
           SHAPED + ("git_remote",)),
    Format("gitlab-pat", "vcs-ci", "gitlab-token", gitlab_pat, ("GITLAB_TOKEN", "CI_JOB_TOKEN_OVERRIDE"),
           SHAPED + ("git_remote",)),
    Format("npm-token", "vcs-ci", "npm-token", npm_token, ("NPM_TOKEN", "NODE_AUTH_TOKEN"), SHAPED + ("npmrc",)),
    Format("pypi-token", "vcs-ci", "pypi-token", pypi_token, ("PYPI_TOKEN", "TWINE_PASSWORD"), SHAPED + ("pypirc",)),
    Format("slack-webhook", "chat", "slack-webhook", slack_webhook, ("SLACK_WEBHOOK_URL", "SLACK_HOOK"), URLISH),
    Format("slack-bot-token", "chat", "slack-token", slack_bot_token, ("SLACK_BOT_TOKEN", "SLACK_TOKEN"), SHAPED),
    Format("discord-webhook", "chat", "discord-webhook", discord_webhook, ("DISCORD_WEBHOOK_URL", "DISCORD_HOOK"),
           URLISH),
    Format("telegram-bot-token", "chat", "telegram-token", telegram_token, ("TELEGRAM_BOT_TOKEN", "TG_TOKEN"),
           SHAPED),
    Format("stripe-live-secret", "payment", "stripe-key", stripe_live, ("STRIPE_SECRET_KEY", "STRIPE_API_KEY"),
           SHAPED),
    Format("stripe-test-secret", "payment", "stripe-key", stripe_test, ("STRIPE_SECRET_KEY", "STRIPE_TEST_KEY"),
           SHAPED),
    Format("stripe-restricted", "payment", "stripe-key", stripe_restricted, ("STRIPE_RESTRICTED_KEY",), SHAPED),
    Format("openai-key", "llm", "openai-key", openai_key, ("OPENAI_API_KEY",), SHAPED),
    Format("anthropic-key", "llm", "anthropic-key", anthropic_key, ("ANTHROPIC_API_KEY",), SHAPED),
    Format("google-ai-key", "llm", "google-api-key", google_api_key, ("GEMINI_API_KEY", "GOOGLE_API_KEY"), SHAPED),
    Format("huggingface-token", "llm", "huggingface-token", huggingface_token, ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"),
           SHAPED),
    Format("pem-private-key", "private-key", "private-key", pem_key, ("",), ("pem_file", "k8s_secret", "pem_in_code")),
    Format("jwt", "jwt", "jwt", jwt, ("ACCESS_TOKEN", "SUPABASE_SERVICE_ROLE_KEY", "access_token", "id_token"),
           SHAPED + ("http_headers",)),
    Format("postgres-url", "url-password", "password-in-url", _db_url("postgresql", 5432),
           ("DATABASE_URL", "POSTGRES_URL"), URLISH),
    Format("mysql-url", "url-password", "password-in-url", _db_url("mysql", 3306), ("DATABASE_URL", "MYSQL_URL"),
           URLISH),
    Format("mongodb-srv-url", "url-password", "password-in-url", mongodb_srv, ("MONGODB_URI", "MONGO_URL"), URLISH),
    Format("redis-url", "url-password", "password-in-url", _db_url("redis", 6379, user="default", path="/0"),
           ("REDIS_URL", "CELERY_BROKER_URL"), URLISH),
    Format("amqp-url", "url-password", "password-in-url", _db_url("amqp", 5672, path="/prod"),
           ("AMQP_URL", "RABBITMQ_URL", "CELERY_BROKER_URL"), URLISH),
    Format("https-basic-auth-url", "url-password", "password-in-url", https_basic_auth,
           ("PIP_INDEX_URL", "REGISTRY_URL"), URLISH),
    Format("dotenv-password", "dotenv", "dotenv-secret", generic_password,
           ("DB_PASSWORD", "POSTGRES_PASSWORD", "SMTP_PASSWORD", "ADMIN_PASS", "REDIS_PASSWORD"), UNSHAPED),
    Format("dotenv-django-secret-key", "dotenv", "dotenv-secret", django_secret_key,
           ("SECRET_KEY", "DJANGO_SECRET_KEY"), UNSHAPED),
    Format("datadog-key", "dotenv", "dotenv-secret", datadog_key, ("DD_API_KEY", "DD_APP_KEY", "DATADOG_API_KEY"),
           UNSHAPED),
    Format("twilio-auth-token", "dotenv", "dotenv-secret", twilio_auth_token, ("TWILIO_AUTH_TOKEN",), UNSHAPED),
    Format("twilio-api-key", "saas", "twilio-key", twilio_api_key, ("TWILIO_API_KEY",), SHAPED),
    Format("sendgrid-key", "saas", "sendgrid-key", sendgrid_key, ("SENDGRID_API_KEY",), SHAPED),
    Format("mailgun-key", "saas", "mailgun-key", mailgun_key, ("MAILGUN_API_KEY",), UNSHAPED),
    Format("heroku-key", "saas", "heroku-key", heroku_key, ("HEROKU_API_KEY",), SHAPED),
    Format("digitalocean-token", "saas", "digitalocean-token", digitalocean_token,
           ("DIGITALOCEAN_TOKEN", "DO_API_TOKEN"), SHAPED),
    Format("shopify-token", "saas", "shopify-token", shopify_token, ("SHOPIFY_ACCESS_TOKEN",), SHAPED),
    Format("winni-token", "saas", "winni-token", winni_token, ("WINNI_TOKEN",), SHAPED),
    Format("bearer-header", "http", "bearer-token", bearer_opaque, ("",), ("http_headers",)),
    # Added with issue #43.
    Format("azure-sas-url", "cloud", "signed-url", azure_sas_url, ("AZURE_EXPORT_URL", "SAS_URL"), URLISH),
    Format("azure-ad-client-secret", "cloud", "azure-client-secret", azure_client_secret,
           ("AZURE_CLIENT_SECRET", "ARM_CLIENT_SECRET"), SHAPED),
    Format("azure-service-bus-connection-string", "cloud", "azure-storage-key", azure_service_bus,
           ("SERVICEBUS_CONNECTION_STRING", "AzureWebJobsServiceBus"), SHAPED),
    Format("aws-presigned-url", "cloud", "signed-url", aws_presigned_url, ("DOWNLOAD_URL", "INVOICE_URL"), URLISH),
    Format("google-oauth-client-secret", "cloud", "google-oauth-secret", prefixed("GOCSPX-", B64URL, 28),
           ("GOOGLE_CLIENT_SECRET",), SHAPED),
    Format("google-oauth-access-token", "cloud", "google-oauth-token", prefixed("ya29.a0A", B64URL, 150),
           ("GOOGLE_ACCESS_TOKEN", "GCLOUD_TOKEN"), SHAPED + ("http_headers",)),
    Format("alibaba-access-key-id", "cloud", "alibaba-access-key", prefixed("LTAI5t", B62, 18),
           ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALICLOUD_ACCESS_KEY"), SHAPED),
    Format("gitlab-other-token", "vcs-ci", "gitlab-token", gitlab_other, ("GITLAB_DEPLOY_TOKEN", "RUNNER_TOKEN"),
           SHAPED + ("git_remote",)),
    Format("docker-hub-pat", "vcs-ci", "docker-hub-token", prefixed("dckr_pat_", B64URL, 27),
           ("DOCKERHUB_TOKEN", "DOCKER_PASSWORD"), SHAPED),
    Format("atlassian-api-token", "vcs-ci", "atlassian-token", prefixed("ATATT3xFfGF0", B64URL, 170,
           lambda rng: "=" + pick(rng, HEX, 8).upper()), ("JIRA_API_TOKEN", "CONFLUENCE_TOKEN"), SHAPED),
    Format("bitbucket-app-password", "vcs-ci", "atlassian-token", prefixed("ATBB", B62, 32),
           ("BITBUCKET_APP_PASSWORD",), SHAPED + ("git_remote",)),
    Format("terraform-cloud-token", "vcs-ci", "terraform-token", terraform_token, ("TF_TOKEN_app_terraform_io",
           "TFE_TOKEN"), SHAPED),
    Format("vault-token", "vcs-ci", "vault-token", vault_token, ("VAULT_TOKEN",), SHAPED + ("http_headers",)),
    Format("pulumi-token", "vcs-ci", "pulumi-token", prefixed("pul-", HEX, 40), ("PULUMI_ACCESS_TOKEN",), SHAPED),
    Format("doppler-token", "vcs-ci", "doppler-token", prefixed(("dp.pt.", "dp.st.prd.", "dp.sa."), B62, 43),
           ("DOPPLER_TOKEN",), SHAPED),
    Format("databricks-token", "vcs-ci", "databricks-token", prefixed("dapi", HEX, 32), ("DATABRICKS_TOKEN",),
           SHAPED + ("http_headers",)),
    Format("nuget-key", "vcs-ci", "nuget-key", prefixed("oy2", LOWER_DIGITS, 43), ("NUGET_API_KEY",), SHAPED),
    Format("rubygems-key", "vcs-ci", "rubygems-key", prefixed("rubygems_", HEX, 48), ("GEM_HOST_API_KEY",), SHAPED),
    Format("grafana-service-account-token", "vcs-ci", "grafana-token",
           prefixed("glsa_", B62, 32, lambda rng: "_" + pick(rng, HEX, 8)), ("GRAFANA_TOKEN",), SHAPED),
    Format("buildkite-token", "vcs-ci", "buildkite-token", prefixed("bkua_", HEX, 40), ("BUILDKITE_API_TOKEN",),
           SHAPED),
    Format("postman-key", "saas", "postman-key", prefixed("PMAK-", HEX, 24, lambda rng: "-" + pick(rng, HEX, 34)),
           ("POSTMAN_API_KEY",), SHAPED),
    Format("dynatrace-token", "saas", "dynatrace-token", prefixed("dt0c01.", UPPER_DIGITS, 24,
           lambda rng: "." + pick(rng, UPPER_DIGITS, 64)), ("DT_API_TOKEN",), SHAPED),
    Format("newrelic-key", "saas", "newrelic-key", prefixed("NRAK-", UPPER_DIGITS, 27), ("NEW_RELIC_API_KEY",),
           SHAPED),
    Format("sentry-dsn", "saas", "sentry-dsn", sentry_dsn, ("SENTRY_DSN",), URLISH),
    Format("sentry-user-token", "saas", "sentry-token", prefixed("sntryu_", HEX, 64), ("SENTRY_AUTH_TOKEN",), SHAPED),
    Format("supabase-access-token", "saas", "supabase-key", prefixed("sbp_", HEX, 40), ("SUPABASE_ACCESS_TOKEN",),
           SHAPED),
    Format("planetscale-token", "saas", "planetscale-token", prefixed(("pscale_tkn_", "pscale_pw_"), B64URL, 43),
           ("PLANETSCALE_SERVICE_TOKEN", "DATABASE_PASSWORD"), SHAPED),
    Format("render-key", "saas", "render-key", prefixed("rnd_", B62, 32), ("RENDER_API_KEY",), SHAPED),
    Format("netlify-token", "saas", "netlify-token", prefixed("nfp_", B62, 36), ("NETLIFY_AUTH_TOKEN",), SHAPED),
    Format("fly-token", "saas", "fly-token", prefixed("fo1_", B64URL, 43), ("FLY_API_TOKEN",), SHAPED),
    Format("prefect-key", "saas", "prefect-key", prefixed("pnu_", B62, 36), ("PREFECT_API_KEY",), SHAPED),
    Format("slack-app-token", "chat", "slack-token", slack_app_token, ("SLACK_APP_TOKEN",), SHAPED),
    Format("slack-user-token", "chat", "slack-token", slack_user_token, ("SLACK_USER_TOKEN",), SHAPED),
    Format("teams-webhook", "chat", "teams-webhook", teams_webhook, ("TEAMS_WEBHOOK_URL",), URLISH),
    Format("discord-bot-token", "chat", "discord-token", discord_bot_token, ("DISCORD_BOT_TOKEN", "DISCORD_TOKEN"),
           SHAPED),
    Format("stripe-webhook-secret", "payment", "stripe-key", prefixed("whsec_", B62, 32),
           ("STRIPE_WEBHOOK_SECRET",), SHAPED),
    Format("square-access-token", "payment", "square-token", prefixed("EAAA", B64URL, 60), ("SQUARE_ACCESS_TOKEN",),
           SHAPED),
    Format("square-oauth-secret", "payment", "square-token", prefixed("sq0csp-", B64URL, 43),
           ("SQUARE_APPLICATION_SECRET",), SHAPED),
    Format("braintree-access-token", "payment", "braintree-token", braintree_token, ("BRAINTREE_ACCESS_TOKEN",),
           SHAPED),
    Format("mailchimp-key", "saas", "mailchimp-key", mailchimp_key, ("MAILCHIMP_API_KEY",), SHAPED),
    Format("groq-key", "llm", "groq-key", prefixed("gsk_", B62, 52), ("GROQ_API_KEY",), SHAPED),
    Format("replicate-token", "llm", "replicate-token", prefixed("r8_", B62, 37), ("REPLICATE_API_TOKEN",), SHAPED),
    Format("perplexity-key", "llm", "perplexity-key", prefixed("pplx-", B62, 48), ("PERPLEXITY_API_KEY",), SHAPED),
    Format("xai-key", "llm", "xai-key", prefixed("xai-", B62, 80), ("XAI_API_KEY",), SHAPED),
    Format("langsmith-key", "llm", "langsmith-key", langsmith_key, ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"), SHAPED),
    Format("tavily-key", "llm", "tavily-key", prefixed("tvly-dev-", B62, 32), ("TAVILY_API_KEY",), SHAPED),
    Format("openrouter-key", "llm", "openrouter-key", prefixed("sk-or-v1-", HEX, 64), ("OPENROUTER_API_KEY",), SHAPED),
    Format("linear-key", "saas", "linear-key", prefixed("lin_api_", B62, 40), ("LINEAR_API_KEY",), SHAPED),
    Format("notion-token", "saas", "notion-token", prefixed("ntn_", string.digits, 11,
           lambda rng: pick(rng, B62, 35)), ("NOTION_TOKEN",), SHAPED),
    Format("notion-legacy-token", "saas", "notion-token", prefixed("secret_", B62, 43), ("NOTION_API_KEY",), SHAPED),
    Format("figma-token", "saas", "figma-token", prefixed("figd_", B64URL, 40), ("FIGMA_TOKEN",), SHAPED),
    Format("contentful-token", "saas", "contentful-token", prefixed("CFPAT-", B64URL, 43),
           ("CONTENTFUL_MANAGEMENT_TOKEN",), SHAPED),
    Format("airtable-token", "saas", "airtable-token", prefixed("pat", B62, 14, lambda rng: "." + pick(rng, HEX, 64)),
           ("AIRTABLE_TOKEN",), SHAPED),
    Format("twitter-bearer-token", "saas", "twitter-bearer", twitter_bearer, ("TWITTER_BEARER_TOKEN",),
           SHAPED + ("http_headers",)),
    Format("mapbox-secret-token", "saas", "mapbox-token", mapbox_token, ("MAPBOX_SECRET_TOKEN",), SHAPED),
    Format("age-secret-key", "private-key", "age-secret-key", prefixed("AGE-SECRET-KEY-1", UPPER_DIGITS, 58),
           ("SOPS_AGE_KEY",), SHAPED),
    Format("pgp-private-key", "private-key", "private-key", pgp_private_key, ("",),
           ("pem_file", "k8s_secret", "pem_in_code")),
    Format("kubeconfig-client-key-data", "private-key", "private-key", kube_client_key, ("",), ("kubeconfig",)),
    Format("jwe", "jwt", "jwt", jwe, ("ID_TOKEN", "ENCRYPTED_TOKEN"), SHAPED + ("http_headers",)),
    Format("jwt-split-across-lines", "jwt", "jwt", jwt_wrapped, ("",), ("folded_output", "js_concat")),
    Format("paseto", "jwt", "paseto", paseto, ("PASETO_TOKEN", "ACCESS_TOKEN"), SHAPED + ("http_headers",)),
    Format("fernet-token", "jwt", "fernet-token", fernet, ("ENCRYPTED_PAYLOAD", "RESET_TOKEN"), SHAPED),
    Format("docker-config-auth", "http", "docker-auth", docker_auth, ("",), ("docker_config",)),
    Format("session-cookie", "http", "cookie", session_cookie,
           ("sessionid", "PHPSESSID", "connect.sid", "_billing_session", "JSESSIONID"), ("curl_cookie",)),
    Format("sqlserver-connection-string", "url-password", "named-secret", sqlserver_connection,
           ("ConnectionStrings__Default", "SQLSERVER_CONNECTION"), URLISH),
)


# ---- the documents ---------------------------------------------------------------------------

@dataclass
class Planted:
    format: Format
    secret: Secret


@dataclass
class Document:
    context: str
    text: str
    planted: list[Planted] = field(default_factory=list)


ORDINARY_ENV = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/home/dev", "LANG=C.UTF-8",
    "NODE_ENV=production", "PORT=8000", "DEBUG=false", "LOG_LEVEL=info", "ALLOWED_HOSTS=localhost,127.0.0.1",
    "TZ=UTC", "PWD=/app", "SHLVL=1", "TERM=xterm-256color", "AWS_REGION=eu-west-1", "AWS_DEFAULT_OUTPUT=json",
    "S3_BUCKET=acme-prod-uploads", "TOKEN_TTL=3600", "MAX_TOKENS=4096", "SECRET_KEY_FALLBACKS=",
    "PYTHONUNBUFFERED=1", "WEB_CONCURRENCY=4", "SESSION_COOKIE_SECURE=true", "PASSWORD_MIN_LENGTH=12",
    "API_KEY=${API_KEY}", "STRIPE_PUBLISHABLE_KEY=pk_test_TYooMQauvdEDq54NiTphI7jx", "EMAIL_HOST=smtp.mailgun.org",
    "SENTRY_ENVIRONMENT=production", "OTEL_SERVICE_NAME=billing-api", "JWT_ALGORITHM=HS256",
    "GITHUB_REPOSITORY=acme/billing-api", "RUNNER_OS=Linux", "CI=true",
]


def _ordinary_env(rng: random.Random) -> list[str]:
    lines = rng.sample(ORDINARY_ENV, rng.randint(4, 9))
    lines.append(f"HOSTNAME={pick(rng, HEX, 12)}")
    lines.append(f"GIT_COMMIT={pick(rng, HEX, 40)}")
    lines.append(f"BUILD_ID={uuid.UUID(int=rng.getrandbits(128))}")
    return lines


def _assign_env(rng, name: str, value: str) -> str:
    quote = rng.choice(["", "", '"', "'"]) if "\n" not in value else '"'
    return f"{name}={quote}{value}{quote}"


def _name(rng, f: Format) -> str:
    return rng.choice(f.names) or "SECRET"


def dotenv(rng, items):
    lines = ["$ cat .env", "# generated by ./scripts/bootstrap.sh -- do not commit"]
    env = _ordinary_env(rng)
    for f, s in items:
        env.insert(rng.randint(0, len(env)), _assign_env(rng, _name(rng, f), s.value))
    return "\n".join(lines + env) + "\n"


def printenv(rng, items):
    env = _ordinary_env(rng) + [f"{_name(rng, f)}={s.value}" for f, s in items]
    return "$ printenv | sort\n" + "\n".join(sorted(env)) + "\n"


def shell_history(rng, items):
    lines, n = [], rng.randint(400, 900)
    ordinary = ["git status", "git pull --rebase", "ls -la", "make test", "docker compose ps", "cd ~/src/billing-api",
                "python -m pytest -x -q", "vim settings.py", "kubectl get pods -n prod", "htop"]
    for f, s in items:
        for _ in range(rng.randint(1, 3)):
            lines.append(rng.choice(ordinary))
        name = _name(rng, f)
        v = s.value
        if f.kind in ("password-in-url",) and rng.random() < 0.5:
            tool = {"postgresql": "psql", "mysql": "mysql --url", "mongodb+srv": "mongosh", "redis": "redis-cli -u",
                    "amqp": "rabbitmqadmin --uri", "https": "pip install --index-url"}[v.split("://")[0]]
            lines.append(f'{tool} "{v}"')
        elif f.kind in ("slack-webhook", "discord-webhook") and rng.random() < 0.6:
            lines.append(f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy done\"}}' {v}")
        elif f.kind == "jwt" and rng.random() < 0.5:
            lines.append(f'curl -H "Authorization: Bearer {v}" https://api.acme.io/v1/me')
        else:
            lines.append(f"export {name}={v}" if rng.random() < 0.7 else f"{name}={v} ./manage.py runserver")
    lines.append("history | tail -40")
    return "$ history | tail -40\n" + "\n".join(f"{n + i:5d}  {line}" for i, line in enumerate(lines)) + "\n"


def compose(rng, items):
    out = ["$ cat docker-compose.yml", "services:", "  api:", "    image: ghcr.io/acme/billing-api:1.14.2",
           "    ports:", '      - "8000:8000"', "    environment:"]
    listy = rng.random() < 0.5
    for line in _ordinary_env(rng)[:4]:
        out.append(f"      - {line}" if listy else "      " + line.replace("=", ": ", 1))
    for f, s in items:
        name = _name(rng, f)
        out.append(f"      - {name}={s.value}" if listy else f"      {name}: {s.value}")
    out += ["    depends_on:", "      - db", "  db:", "    image: postgres:16", "    volumes:",
            "      - pgdata:/var/lib/postgresql/data", "volumes:", "  pgdata: {}"]
    return "\n".join(out) + "\n"


def settings_py(rng, items):
    out = ["$ cat config/settings/production.py", "import os", "from .base import *  # noqa", "",
           "DEBUG = False", 'ALLOWED_HOSTS = ["api.acme.io"]', "password = get_password()",
           "token_count = 1234", 'API_KEY = os.environ["API_KEY"]', ""]
    for f, s in items:
        name = _name(rng, f)
        style = rng.random()
        if style < 0.5:
            out.append(f'{name} = "{s.value}"')
        elif style < 0.8:
            out.append(f'{name} = os.environ.get("{name}", "{s.value}")')
        else:
            out.append(f"client = Client(api_key='{s.value}', timeout=30)" if f.kind != "password-in-url"
                       else f'DATABASES = {{"default": dj_database_url.parse("{s.value}")}}')
    return "\n".join(out) + "\n"


def yaml_config(rng, items):
    out = ["$ cat config.yml", "app:", "  name: billing-api", "  workers: 4", "  log_level: info", "secrets:"]
    for f, s in items:
        key = (_name(rng, f)).lower()
        value = s.value if rng.random() < 0.6 else f'"{s.value}"'
        out.append(f"  {key}: {value}")
    out += ["cache:", "  ttl_seconds: 300", "  max_tokens: 4096"]
    return "\n".join(out) + "\n"


def json_response(rng, items):
    body = {"id": str(uuid.UUID(int=rng.getrandbits(128))), "object": "credential", "created": rng.randint(1.6e9, 1.8e9),
            "sha": pick(rng, HEX, 40)}
    for i, (f, s) in enumerate(items):
        key = rng.choice([n for n in f.names if n] or ["token"])
        key = rng.choice([key, {"jwt": "access_token"}.get(f.kind, "secret"), "api_key", "password", "client_secret"])
        body[key if key not in body else f"{key}_{i}"] = s.value
    body["expires_in"] = 3600
    return ("$ curl -s -H 'Accept: application/json' https://api.acme.io/v1/credentials/rotate | jq .\n"
            + json.dumps(body, indent=2) + "\n")


def log_lines(rng, items):
    out = []
    t = rng.randint(0, 80000)
    for f, s in items:
        for _ in range(rng.randint(1, 4)):
            t += rng.randint(1, 40)
            out.append(f"2026-03-{rng.randint(1, 28):02d}T{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}Z INFO "
                       f"request_id={uuid.UUID(int=rng.getrandbits(128))} GET /v1/invoices 200 {rng.randint(3, 900)}ms")
        name = _name(rng, f).lower()
        out.append(rng.choice([
            f"2026-03-01T10:00:00Z DEBUG config loaded: {name}={s.value}",
            f"2026-03-01T10:00:00Z WARNING retrying with {name}='{s.value}' (attempt 2/5)",
            f"[worker-3] connecting using {s.value}",
        ]))
    return "$ docker compose logs api --tail 60\n" + "\n".join(out) + "\n"


def stack_trace(rng, items):
    out = ["$ python manage.py sync_invoices", "Traceback (most recent call last):",
           '  File "/app/billing/management/commands/sync_invoices.py", line 41, in handle',
           "    client = connect(settings)"]
    for f, s in items:
        name = _name(rng, f).lower()
        if f.kind == "password-in-url":
            out.append('  File "/usr/lib/python3.12/site-packages/sqlalchemy/engine/create.py", line 602, in create_engine')
            out.append(f"sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection failed: {s.value}")
        else:
            out.append('  File "/app/billing/clients.py", line 88, in connect')
            out.append(f"    return Client({name}={s.value!r})")
            out.append(f"ValueError: invalid credentials for {name}={s.value}")
    out.append("Sentry is attempting to send 2 pending events")
    return "\n".join(out) + "\n"


def k8s_secret(rng, items):
    out = ["$ kubectl get secret billing-api -o yaml", "apiVersion: v1", "kind: Secret", "metadata:",
           "  name: billing-api", "  namespace: prod", "type: Opaque", "stringData:"]
    for f, s in items:
        if "\n" in s.value:
            out.append("  tls.key: |")
            out += ["    " + line for line in s.value.splitlines()]
        else:
            out.append(f"  {_name(rng, f)}: {s.value}")
    return "\n".join(out) + "\n"


def prompt(rng, items):
    parts = []
    for _fmt, s in items:
        parts.append(rng.choice([
            f"I'm getting a 401 with this key: {s.value} -- can you check what's wrong with the request?",
            f"use {s.value} for now, I'll rotate it later",
            f"Here's the value from the dashboard `{s.value}`, put it where the app reads it.",
        ]))
    return "\n\n".join(parts) + "\n"


def aws_credentials(rng, items):
    out = ["$ cat ~/.aws/credentials", "[default]"]
    for f, s in items:
        out.append(f"{f.names[1] if len(f.names) > 1 else f.names[0].lower()} = {s.value}")
    out += ["region = eu-west-1", "", "[ci]", "role_arn = arn:aws:iam::123456789012:role/deployer",
            "source_profile = default"]
    return "\n".join(out) + "\n"


def git_remote(rng, items):
    out = ["$ git remote -v"]
    for f, s in items:
        host = "gitlab.com" if f.kind == "gitlab-token" else "github.com"
        user = "oauth2" if host == "gitlab.com" else rng.choice(["x-access-token", "dev"])
        url = f"https://{user}:{s.value}@{host}/acme/billing-api.git"
        out += [f"origin\t{url} (fetch)", f"origin\t{url} (push)"]
    return "\n".join(out) + "\n"


def npmrc(rng, items):
    return "$ cat ~/.npmrc\n" + "\n".join(
        ["registry=https://registry.npmjs.org/", "save-exact=true"]
        + [f"//registry.npmjs.org/:_authToken={s.value}" for _, s in items]) + "\n"


def pypirc(rng, items):
    out = ["$ cat ~/.pypirc", "[distutils]", "index-servers =", "    pypi", "", "[pypi]", "username = __token__"]
    out += [f"password = {s.value}" for _, s in items]
    return "\n".join(out) + "\n"


def pem_file(rng, items):
    path = rng.choice(["~/.ssh/id_rsa", "~/.ssh/id_ed25519", "certs/server.key", "deploy/key.pem"])
    return "\n".join(f"$ cat {path}\n{s.value}" for _, s in items) + "\n"


def pem_in_code(rng, items):
    out = []
    for _, s in items:
        escaped = s.value.replace("\n", "\\n")
        out.append(f'PRIVATE_KEY = "{escaped}"' if rng.random() < 0.5 else f'private_key = """\n{s.value}\n"""')
    return "$ cat tests/fixtures/keys.py\n" + "\n".join(out) + "\n"


def gcp_json(rng, items):
    return "\n".join(f"$ cat service-account.json\n{s.value}" for _, s in items) + "\n"


def http_headers(rng, items):
    out = ["$ curl -v https://api.acme.io/v1/me", "*   Trying 203.0.113.7:443...", "* Connected to api.acme.io",
           "> GET /v1/me HTTP/2", "> Host: api.acme.io", "> User-Agent: curl/8.5.0", "> Accept: */*"]
    for f, s in items:
        out.append(f"> X-Vault-Token: {s.value}" if f.kind == "vault-token" and rng.random() < 0.5
                   else f"> Authorization: Bearer {s.value}")
    out += [">", "< HTTP/2 401", "< content-type: application/json", f"< x-request-id: {pick(rng, HEX, 32)}",
            "<", '{"error":"invalid_token"}']
    return "\n".join(out) + "\n"


def toml_file(rng, items):
    out = ["$ cat config/app.toml", "[server]", 'host = "0.0.0.0"', "port = 8080", 'log_level = "info"', "",
           "[credentials]"]
    for f, s in items:
        value = s.value.replace("\\", "\\\\").replace('"', '\\"')
        out.append(f'{_name(rng, f).lower()} = "{value}"' if rng.random() < 0.8 else f"{_name(rng, f).lower()} = '{s.value}'")
    out += ["", "[cache]", "ttl_seconds = 300", f'build = "{pick(rng, HEX, 40)}"']
    return "\n".join(out) + "\n"


def ini_config(rng, items):
    out = ["$ cat /etc/billing/app.ini", "[DEFAULT]", "environment = production", "workers = 4", "", "[secrets]"]
    for f, s in items:
        out.append(f"{_name(rng, f).lower()} = {s.value}" if rng.random() < 0.7 else f"{_name(rng, f)}={s.value}")
    out += ["", "[logging]", "level = INFO", "format = %(asctime)s %(levelname)s %(message)s"]
    return "\n".join(out) + "\n"


def js_stack_trace(rng, items):
    out = ["$ node scripts/sync-invoices.js", "/app/node_modules/axios/lib/core/settle.js:19",
           "    reject(new AxiosError(", "           ^", "", "AxiosError: Request failed with status code 401",
           "    at settle (/app/node_modules/axios/lib/core/settle.js:19:12)",
           "    at IncomingMessage.handleStreamEnd (/app/node_modules/axios/lib/adapters/http.js:589:11)",
           "    at IncomingMessage.emit (node:events:531:35) {", "  code: 'ERR_BAD_REQUEST',", "  config: {",
           "    headers: Object [AxiosHeaders] {", "      Accept: 'application/json, text/plain, */*',",
           "      'Content-Type': 'application/json',"]
    body, env = [], []
    for f, s in items:
        name = _name(rng, f)
        if f.kind in ("password-in-url", "signed-url", "sentry-dsn", "teams-webhook", "slack-webhook", "discord-webhook"):
            body.append(f"    url: '{s.value}',")
        elif "prompt" in f.contexts and rng.random() < 0.5:
            out.append(f"      Authorization: 'Bearer {s.value}',")
        else:
            env.append(f"      {name}: '{s.value}',")
    out += ["    },", "    method: 'post',", *body, "    data: '{\"since\":\"2026-03-01\"}'", "  },"]
    if env:
        out += ["  env: {", *env, "    NODE_ENV: 'production'", "  },"]
    out += [f"  request_id: '{uuid.UUID(int=rng.getrandbits(128))}'", "}", "", "Node.js v20.11.1"]
    return "\n".join(out) + "\n"


def docker_inspect(rng, items):
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
           "PYTHON_VERSION=3.12.2", f"GPG_KEY={pick(rng, HEX, 40).upper()}"]
    env += [f"{_name(rng, f)}={s.value}" for f, s in items]
    config = [{"Id": pick(rng, HEX, 64), "Created": "2026-03-01T10:00:00.123456789Z", "Path": "gunicorn",
               "Args": ["billing.wsgi", "--bind", "0.0.0.0:8000"], "State": {"Status": "running", "Pid": rng.randint(100, 9999)},
               "Image": "sha256:" + pick(rng, HEX, 64), "Name": "/billing-api-1",
               "Config": {"Hostname": pick(rng, HEX, 12), "Env": env, "Cmd": ["gunicorn", "billing.wsgi"],
                          "Image": "ghcr.io/acme/billing-api:1.14.2", "WorkingDir": "/app",
                          "Labels": {"com.docker.compose.project": "billing", "org.opencontainers.image.revision":
                                     pick(rng, HEX, 40)}}}]
    return "$ docker inspect billing-api-1\n" + json.dumps(config, indent=4) + "\n"


def kubectl_secret(rng, items):
    """What `kubectl get secret -o yaml` really prints: base64 values under `data:`, and the
    manifest as applied (values in clear) in the last-applied-configuration annotation."""
    names = [(_name(rng, f), s) for f, s in items]
    data = {name: base64.b64encode(s.value.encode()).decode() for name, s in names}
    data["username"] = base64.b64encode(b"billing").decode()
    applied = {"apiVersion": "v1", "kind": "Secret", "metadata": {"annotations": {}, "name": "billing-api",
                                                                   "namespace": "prod"},
               "stringData": {name: s.value for name, s in names} | {"username": "billing"}, "type": "Opaque"}
    out = ["$ kubectl get secret billing-api -n prod -o yaml", "apiVersion: v1", "data:"]
    out += [f"  {name}: {value}" for name, value in sorted(data.items())]
    out += ["kind: Secret", "metadata:", "  annotations:", "    kubectl.kubernetes.io/last-applied-configuration: |",
            "      " + json.dumps(applied, separators=(",", ":")), '  creationTimestamp: "2026-03-01T10:00:00Z"',
            "  name: billing-api", "  namespace: prod", f'  resourceVersion: "{rng.randint(1000, 99999)}"',
            f"  uid: {uuid.UUID(int=rng.getrandbits(128))}", "type: Opaque"]
    return "\n".join(out) + "\n"


def kubeconfig(rng, items):
    cert = base64.b64encode(("-----BEGIN CERTIFICATE-----\n" + base64.b64encode(rng.randbytes(600)).decode()
                             + "\n-----END CERTIFICATE-----\n").encode()).decode()
    out = ["$ kubectl config view --raw", "apiVersion: v1", "clusters:", "- cluster:",
           f"    certificate-authority-data: {cert}", "    server: https://10.0.0.1:6443", "  name: prod",
           "contexts:", "- context:", "    cluster: prod", "    user: admin", "  name: prod", "current-context: prod",
           "kind: Config", "preferences: {}", "users:"]
    for i, (_, s) in enumerate(items):
        out += [f"- name: admin{i or ''}", "  user:", f"    client-certificate-data: {cert}", f"    client-key-data: {s.value}"]
    return "\n".join(out) + "\n"


def docker_config(rng, items):
    registries = ["https://index.docker.io/v1/", "ghcr.io", "registry.gitlab.com", "123456789012.dkr.ecr.eu-west-1.amazonaws.com"]
    config = {"auths": {registry: {"auth": s.value} for registry, (_, s) in zip(rng.sample(registries, len(items)), items)},
              "credsStore": "", "currentContext": "default"}
    return "$ cat ~/.docker/config.json\n" + json.dumps(config, indent="\t") + "\n"


def curl_cookie(rng, items):
    out = ["$ curl -v -c cookies.txt -X POST https://app.acme.io/accounts/login/ -d @login.json",
           "*   Trying 203.0.113.7:443...", "> POST /accounts/login/ HTTP/2", "> Host: app.acme.io",
           "> content-type: application/json", ">", "< HTTP/2 302", "< location: /dashboard/", "< vary: Cookie"]
    for f, s in items:
        name = _name(rng, f)
        out.append(f"< set-cookie: {name}={s.value}; expires=Sat, 12 Dec 2026 10:00:00 GMT; HttpOnly; Max-Age=1209600; "
                   "Path=/; SameSite=Lax; Secure")
    out += ["<", "$ curl -s -b cookies.txt https://app.acme.io/api/me -v 2>&1 | grep -i cookie",
            "> cookie: " + "; ".join(f"{_name(rng, f)}={s.value}" for f, s in items)]
    return "\n".join(out) + "\n"


def _fold(text: str, width: int) -> str:
    return "\n".join(line[i:i + width] or "" for line in text.splitlines() for i in range(0, max(1, len(line)), width))


def folded_output(rng, items):
    """Long lines hard-wrapped by a narrow terminal or `fold`, a token cut mid-way."""
    width = rng.choice([64, 76, 80, 100])
    parts = []
    for _, s in items:
        parts.append(rng.choice([
            f"$ kubectl create token deployer -n prod --duration=1h | fold -w {width}\n{s.value}",
            f"$ curl -sv https://api.acme.io/v1/me 2>&1 | head\n> GET /v1/me HTTP/2\n> Host: api.acme.io\n"
            f"> Authorization: Bearer {s.value}\n< HTTP/2 200",
            f"2026-03-01T10:00:00Z DEBUG auth: issued token={s.value} ttl=3600",
        ]))
    return _fold("\n".join(parts), width) + "\n"


def js_concat(rng, items):
    out = ["$ cat test/fixtures/auth.js"]
    for i, (_, s) in enumerate(items):
        pieces = [s.value[j:j + 60] for j in range(0, len(s.value), 60)]
        if rng.random() < 0.5:
            out += [f"export const TOKEN_{i} =", *[f"  '{p}'" + (" +" if k < len(pieces) - 1 else ";") for k, p in enumerate(pieces)]]
        else:
            out += [f"ACCESS_TOKEN_{i} = (", *[f'    "{p}"' for p in pieces], ")"]
    return "\n".join(out) + "\n"


CONTEXTS: dict[str, Callable] = {fn.__name__: fn for fn in (
    dotenv, printenv, shell_history, compose, settings_py, yaml_config, json_response, log_lines, stack_trace,
    k8s_secret, prompt, aws_credentials, git_remote, npmrc, pypirc, pem_file, pem_in_code, gcp_json, http_headers,
    toml_file, ini_config, js_stack_trace, docker_inspect, kubectl_secret, kubeconfig, docker_config, curl_cookie,
    folded_output, js_concat)}
# What else must not survive, per carrier: a Kubernetes Secret's `data:` holds each value base64-encoded.
EXTRA_MATERIAL: dict[str, Callable[[Secret], tuple[str, ...]]] = {
    "kubectl_secret": lambda s: (base64.b64encode(s.value.encode()).decode(),),
}


def planted_documents(seed: int = 21, per_format: int = 20) -> list[Document]:
    """`per_format` secrets of every format, one to four per document, in documents of the contexts
    each format can live in."""
    rng = random.Random(seed)
    queue = [f for f in FORMATS for _ in range(per_format)]
    rng.shuffle(queue)
    documents = []
    while queue:
        first = queue.pop()
        context = rng.choice(first.contexts)
        chosen, wanted = [first], rng.randint(1, 4)
        for f in list(queue):  # companions that fit the same document
            if len(chosen) >= wanted:
                break
            if context in f.contexts and f not in chosen and (context != "pem_file" or f is first):
                chosen.append(f)
                queue.remove(f)
        items = [(f, f.make(rng)) for f in chosen]
        if context in EXTRA_MATERIAL:
            items = [(f, Secret(s.value, s.material + EXTRA_MATERIAL[context](s))) for f, s in items]
        text = CONTEXTS[context](rng, items)
        documents.append(Document(context, text, [Planted(f, s) for f, s in items]))
    return documents


def leaked(material: str, text: str) -> bool:
    """Whether any 12-character stretch of the material (all of it when shorter) survives in `text`."""
    if len(material) <= 12:
        return material in text
    return any(material[i:i + 12] in text for i in range(0, len(material) - 11, 4))


# ---- ordinary tool output (for the cost measurement) -----------------------------------------

def _source_files() -> list[str]:
    import subprocess

    names = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.html"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    return [(ROOT / n).read_text(errors="replace") for n in names if (ROOT / n).is_file()]


_SOURCES: list[str] = []


def tool_output(rng: random.Random, size: int) -> str:
    """Roughly `size` characters of what tools print: slices of real source files (`cat`, `sed -n`),
    pytest and git output, JSON listings."""
    if not _SOURCES:
        _SOURCES.extend(_source_files())
    parts, total = [], 0
    while total < size:
        kind = rng.random()
        if kind < 0.5:
            source = rng.choice(_SOURCES)
            start = rng.randint(0, max(0, len(source) - 4000))
            part = source[start:start + rng.randint(800, 6000)]
        elif kind < 0.7:
            part = "\n".join(
                f"tests/test_{rng.choice(['api', 'models', 'tasks', 'views'])}.py::test_{pick(rng, string.ascii_lowercase, 8)} "
                f"{rng.choice(['PASSED', 'PASSED', 'PASSED', 'FAILED', 'SKIPPED'])} [{rng.randint(1, 99):3d}%]"
                for _ in range(rng.randint(10, 60)))
        elif kind < 0.85:
            part = "\n".join(
                f"commit {pick(rng, HEX, 40)}\nAuthor: Dev {pick(rng, string.ascii_uppercase, 1)} <dev@acme.io>\n"
                f"Date:   Mon Mar {rng.randint(1, 28)} 10:{rng.randint(10, 59)}:00 2026 +0100\n\n"
                f"    {rng.choice(['Fix', 'Add', 'Refactor', 'Bump'])} {pick(rng, string.ascii_lowercase, 7)} handling\n"
                for _ in range(rng.randint(3, 15)))
        else:
            part = json.dumps([{"id": str(uuid.UUID(int=rng.getrandbits(128))), "sha256": pick(rng, HEX, 64),
                                "name": pick(rng, string.ascii_lowercase, 9), "size": rng.randint(10, 10**7),
                                "etag": f'"{pick(rng, HEX, 32)}"'} for _ in range(rng.randint(3, 30))], indent=2)
        parts.append(part)
        total += len(part) + 1
    return "\n".join(parts)[:size]


# ---- other syntaxes --------------------------------------------------------------------------
# Added after the first tuning round (the detector redacted 90.0 % of them then; what it missed
# was fixed generically): TOML, properties, INI, XML, netrc, PowerShell, Terraform, command lines,
# Go / JS / Ruby code, ~/.pgpass, Helm values. Single-line formats only. Fields: {name} (the
# variable), {lower}, {dotted} (app.db.password), {camel} (DbPassword), {tag} (an XML element), {value}.
OTHER_SYNTAXES = {
    "toml_config": '$ cat pyproject.toml\n[tool.app]\nname = "billing"\n{lower} = "{value}"\ntimeout = 30\n',
    "java_properties": "$ cat src/main/resources/application.properties\nserver.port=8080\napp.{dotted}={value}\n"
                       "spring.jpa.open-in-view=false\n",
    "ini_file": "$ cat setup.cfg\n[credentials]\n{lower} = {value}\nregion = eu-west-1\n",
    "maven_xml": "$ cat ~/.m2/settings.xml\n<settings>\n  <servers>\n    <server>\n      <id>releases</id>\n"
                 "      <username>deploy</username>\n      <{tag}>{value}</{tag}>\n    </server>\n  </servers>\n"
                 "</settings>\n",
    "netrc": "$ cat ~/.netrc\nmachine api.acme.io\n  login deploy\n  password {value}\n",
    "powershell": 'PS C:\\src> $env:{name} = "{value}"\nPS C:\\src> python app.py\nstarted\n',
    "terraform_tfvars": '$ cat prod.tfvars\nregion = "eu-west-1"\n{lower} = "{value}"\ninstance_count = 3\n',
    "curl_user": '$ curl -u deploy:{value} https://api.acme.io/v1/builds\n{{"builds": []}}\n',
    "mysql_cli": "$ mysql -h db.internal -u app -p'{value}' billing -e 'select 1'\n1\n",
    "docker_login": "$ docker login ghcr.io -u ci-bot -p {value}\nWARNING! Using --password via the CLI is insecure.\n"
                    "Login Succeeded\n",
    "go_code": '$ cat config.go\npackage config\n\nconst default{camel} = "{value}"\n',
    "js_code": "$ cat config.js\nexport const config = {{\n  {lower}: process.env.{name} || '{value}',\n}};\n",
    "ruby_code": '$ cat config/initializers/app.rb\nApp.key = ENV.fetch("{name}", "{value}")\n',
    "pgpass": "$ cat ~/.pgpass\ndb.internal:5432:billing:app:{value}\n",
    "helm_values": '$ helm get values billing\nimage:\n  tag: 1.14.2\nenv:\n  - name: {name}\n    value: "{value}"\n',
}


def held_out_documents(seed: int = 77, per_context: int = 30) -> list[Document]:
    rng = random.Random(seed)
    single_line = [f for f in FORMATS if f.family not in ("private-key",) and f.kind != "password-in-url"
                   and "http_headers" not in f.contexts and "dotenv" in f.contexts]
    documents = []
    for context, template in OTHER_SYNTAXES.items():
        for _ in range(per_context):
            f = rng.choice(single_line)
            secret, name = f.make(rng), _name(rng, f)
            text = template.format(
                name=name, lower=name.lower(), dotted=name.lower().replace("_", "."),
                camel="".join(part.capitalize() for part in name.lower().split("_")),
                tag=rng.choice(["password", "token", "apiKey", name.lower()]), value=secret.value)
            documents.append(Document(context, text, [Planted(f, secret)]))
    return documents


# ---- timing ----------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(find: Callable[[str], object], texts: list[str], desc: str) -> tuple[list[float], list[float]]:
    """Milliseconds per call: wall clock, and this thread's CPU time (which other processes
    sharing the cores do not inflate)."""
    from tqdm import tqdm

    wall, cpu = [], []
    for text in tqdm(texts, desc=desc):
        started, started_cpu = time.perf_counter(), time.thread_time()
        find(text)
        cpu.append((time.thread_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
    return wall, cpu
