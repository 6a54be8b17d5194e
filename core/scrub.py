"""Secret scrubbing: what Winni does to free text before anything is stored.

`scrub(text)` first drops `<private>…</private>` spans (case-insensitive, across lines; an
unclosed `<private>` runs to the end of the text, since a forgotten closing tag must not leak
what the user meant to hide), then replaces every recognised secret by `[REDACTED:<type>]`.

Detection is Yelp's detect-secrets: its regex plugins' patterns (AWS, Azure storage, GitHub,
GitLab, PyPI, Slack, Discord, Stripe, SendGrid, Twilio, Mailchimp) and its JWT validation. Written
here, the formats it lacks or matches too slowly: PEM private-key blocks (also JSON-escaped, also
cut off before their END line), passwords in connection URLs (user and host are kept), on
command lines (`curl -u`, `mysql -p`, `docker login -p`) and in ~/.pgpass, Authorization headers,
Anthropic / OpenAI / OpenRouter / Google / Hugging Face / Stripe test and restricted / GitHub
fine-grained / npm / DigitalOcean / Heroku / Shopify / Mailgun / Telegram / age / Winni tokens,
hosted services' prefixed credentials (issue #43: Azure AD, SAS and pre-signed URL signatures,
Google OAuth, Vault, Terraform Cloud, Doppler, Databricks, Sentry DSNs, Slack app tokens, Square,
Braintree, Groq, xAI and ~50 more, in HOSTED_SERVICE_PATTERNS), JWS and JWE (also cut over lines),
PASETO, Fernet, Docker config auths, kubeconfig client keys, a Kubernetes Secret's base64 `data:`,
cookies, and values of secret-named keys (`DB_PASSWORD=…`, `"client_secret": "…"`, `api_key='…'`,
`<password>…</password>`, `--token …`, Kubernetes `name:`/`value:` pairs) when the value looks
like a secret rather than code, a reference or a placeholder. No entropy-only detection:
measured, it redacts hashes and ids in ordinary tool output (docs/privacy.md).

Every pattern is bounded (no nested quantifiers, capped repetition), so the cost is linear in
the text; scrubbing is idempotent (`[REDACTED:…]` and `[private]` match nothing) and never
raises on odd input. Pure: standard library and detect-secrets only.
"""
from __future__ import annotations

import base64
import binascii
import bisect
import json
import re
import string
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

PRIVATE = "[private]"


def redaction(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class ScrubResult:
    text: str
    counts: dict[str, int] = field(default_factory=dict)  # secrets redacted, per type
    private: int = 0                                       # `<private>` spans dropped

    @property
    def redacted(self) -> int:
        return sum(self.counts.values())


# ---- token patterns --------------------------------------------------------------------------

TOKEN_CHARS = "A-Za-z0-9_-"
TOKEN_TAIL = re.compile(f"[{TOKEN_CHARS}]{{0,200}}")
WORD_CHAR = re.compile(r"[A-Za-z0-9]")


@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: re.Pattern[str]
    tail: re.Pattern[str] | None = TOKEN_TAIL  # run the match on over these (a pattern may stop short of the end)
    valid: Callable[[str], bool] | None = None
    gate: re.Pattern[bytes] | None = None  # skip the pattern unless this finds something in the ASCII-lowercased text
    # The regex finds an anchor inside the secret (`:` of a Telegram token); the secret starts up to
    # lead_max of these characters before it.
    lead: str = ""
    lead_max: int = 0
    # Skip the pattern unless the text holds one of these (a substring search is many times faster
    # than the regex engine's scan, and most texts hold none of a hundred prefixes). By default the
    # regex's literal start, when it has one of two or more characters.
    needles: tuple[str, ...] | None = None
    in_runs: bool = True  # every match lies in one run of RUN's characters (16 or more), so do the needles

    def __post_init__(self) -> None:
        if self.needles is None:
            prefix = _literal_prefix(self.regex)
            object.__setattr__(self, "needles", (prefix,) if len(prefix) >= 2 else ())



def _literal_prefix(regex: re.Pattern[str]) -> str:
    """The characters every match of a case-sensitive regex starts with ("" when unsure)."""
    if regex.flags & re.IGNORECASE:
        return ""
    pattern, prefix, i = regex.pattern, [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern) and pattern[i + 1] in ".-$/~":
            prefix.append(pattern[i + 1])
            i += 2
        elif char.isalnum() or char in "_:~\"=! -/@%,":
            prefix.append(char)
            i += 1
        else:
            break
    # A quantifier or optional group after the last character may repeat or drop it.
    if i < len(pattern) and pattern[i] in "{*?+" and prefix:
        prefix.pop()
    return "".join(prefix)


def token(prefix: str, body: str, kind: str, **options: Any) -> Pattern:
    """`prefix` + `body`, not inside a longer token: the look-behind sits after the literal prefix
    so the regex engine still skips ahead to the prefix, and a run like `sk-sk-sk-…` costs one try."""
    literal = re.escape(prefix)
    return Pattern(kind, re.compile(f"{literal}(?<![{TOKEN_CHARS}]{literal}){body}"), **options)


HAS_LOWER, HAS_UPPER, HAS_DIGIT = re.compile("[a-z]"), re.compile("[A-Z]"), re.compile("[0-9]")
HAS_SYMBOL = re.compile(r"[!#%&*+/:;<=>?@^|~$()\[\]{}]")


def _mixed_case(value: str) -> bool:
    return HAS_UPPER.search(value) is not None and HAS_LOWER.search(value) is not None


def _random_looking(value: str) -> bool:
    return _mixed_case(value) and HAS_DIGIT.search(value) is not None


# detect-secrets' regex plugins, their patterns as they are. A gate, a cheap search on the lowercased
# text, spares those the engine cannot skip through quickly (case-insensitive ones, those starting
# with a character class) most of the time. Its OpenAI and JWT patterns repeat without bound before
# a required suffix (16 s and 3 s on a 100 KB line of `sk-1-…` / `eyJ1-…`), its npm pattern is `.+`
# over the line and its Telegram one starts with a digit class: those formats are matched with
# bounded, anchored equivalents below; JWTs are still validated by the plugin.
LIBRARY_PATTERNS: list[Pattern] = [
    Pattern("aws-access-key", AWSKeyDetector.denylist[0], needles=("A3T", "ABIA", "ACCA", "AKIA", "ASIA")),
    Pattern("aws-secret-key", AWSKeyDetector.denylist[1], tail=None, gate=re.compile(rb"aws")),  # aws…key…'<40>' (group 1)
    Pattern("azure-storage-key", AzureStorageKeyDetector.denylist[0], tail=None),
    Pattern("github-token", GitHubTokenDetector.denylist[0], needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    Pattern("gitlab-token", GitLabTokenDetector.denylist[0], needles=("glpat-", "gldt-", "glft-", "glsoat-", "glrt-")),
    *[Pattern("gitlab-token", regex) for regex in GitLabTokenDetector.denylist[1:]],
    Pattern("pypi-token", PypiTokenDetector.denylist[0]),
    Pattern("pypi-token", PypiTokenDetector.denylist[1]),
    Pattern("slack-token", SlackDetector.denylist[0], gate=re.compile(rb"xox[abposr]-")),
    Pattern("slack-webhook", SlackDetector.denylist[1], gate=re.compile(rb"hooks\.slack\.com")),
    Pattern("discord-token", DiscordBotTokenDetector.denylist[0], gate=re.compile(rb"\.[a-z0-9_-]{6}\.")),
    Pattern("stripe-key", StripeDetector.denylist[0], needles=("k_live_",)),
    Pattern("sendgrid-key", SendGridDetector.denylist[0]),
    *[Pattern("twilio-key", regex) for regex in TwilioKeyDetector.denylist],
    Pattern("mailchimp-key", MailchimpDetector.denylist[0], gate=re.compile(rb"-us[0-9]")),
]

def _b64decode(value: str) -> bytes:
    value = value.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return b""


def _json_object(part: str) -> dict[str, Any] | None:
    try:
        decoded = json.loads(_b64decode(part).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return decoded if isinstance(decoded, dict) else None


def _jose(value: str) -> bool:
    """A JWS (three parts: a JSON header naming its `alg`; a JSON payload, or any payload with a
    signature) or a JWE (five parts, a header naming its `enc`)."""
    parts = value.split(".")
    header = _json_object(parts[0])
    if header is None:
        return False
    if len(parts) == 5:
        return "enc" in header
    if len(parts) != 3 or not ("alg" in header or "typ" in header):
        return False
    return _json_object(parts[1]) is not None if parts[1].startswith("eyJ") else len(parts[2]) >= 16


def _basic_auth(value: str) -> bool:
    """base64 of `user:password` (a Docker config's `auth`)."""
    decoded = _b64decode(value)
    user, colon, password = decoded.partition(b":")
    return bool(colon and user and password) and decoded.isascii() and decoded.decode().isprintable()


def _encoded_private_key(value: str) -> bool:
    """base64 of a PEM private key (kubeconfig's `client-key-data`, a Secret's `tls.key`)."""
    return b"PRIVATE KEY" in _b64decode(value[:80])


ALNUM = string.ascii_letters + string.digits

# Hosted services' prefixed credentials, each with its documented (or observed) prefix, alphabet
# and length. Those whose prefix could start an ordinary word or name also want a random-looking
# body (mixed case and a digit).
HOSTED_SERVICE_PATTERNS: list[Pattern] = [
    # cloud
    Pattern("aws-session-token", re.compile(r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/]{100,4000}={0,2}"),
            tail=None, needles=("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdzE")),
    token("LTAI", r"[A-Za-z0-9]{12,20}(?![A-Za-z0-9])", "alibaba-access-key", valid=_random_looking),
    token("GOCSPX-", r"[A-Za-z0-9_-]{28}", "google-oauth-secret"),
    token("ya29.", r"[A-Za-z0-9_-]{50,2000}", "google-oauth-token", tail=None),
    Pattern("google-oauth-token", re.compile(r"1//0[A-Za-z0-9_-]{40,400}"), tail=None),
    # Azure AD client secrets: three characters, a digit, "Q~", 31-34 more
    Pattern("azure-client-secret", re.compile(r"Q~(?<=[A-Za-z0-9_~.]{3}[0-9]Q~)[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
            tail=None, lead=ALNUM + "_~.", lead_max=4),
    Pattern("azure-storage-key", re.compile(r"SharedAccess(?:Key)=(?P<key>[A-Za-z0-9+/]{30,100}={0,2})"), tail=None),
    # the signature of an Azure SAS token or an S3 / GCS pre-signed URL, and the session token it carries
    Pattern("signed-url", re.compile(r"(?:[?&;]sig|X-(?:Amz|Goog)-(?:Signature|Security-Token))="
                                     r"([A-Za-z0-9%+/=_-]{20,4000})"), tail=None, needles=("sig=", "X-Amz-", "X-Goog-")),
    # source hosting, CI, package registries, infrastructure
    token("dckr_", r"(?:pat|oat)_[A-Za-z0-9_-]{27,40}", "docker-hub-token"),
    token("ATATT3", r"[A-Za-z0-9_=-]{100,300}", "atlassian-token"),
    token("ATBB", r"[A-Za-z0-9]{32}", "atlassian-token", valid=_random_looking),
    Pattern("terraform-token", re.compile(r"\.atlasv1\.(?<=[A-Za-z0-9]{14}\.atlasv1\.)[A-Za-z0-9_=-]{60,70}"),
            lead=ALNUM, lead_max=14),
    Pattern("vault-token", re.compile(r"hv[sbr]\.[A-Za-z0-9_-]{24,400}"), valid=_random_looking),
    token("pul-", r"[a-f0-9]{40}(?![A-Za-z0-9])", "pulumi-token"),
    token("dp.", r"(?:pt|st|ct|sa|scim|audit)\.(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,44}", "doppler-token"),
    token("dapi", r"[a-f0-9]{32}(?:-[0-9]{1,2})?(?![A-Za-z0-9])", "databricks-token"),
    token("pnu_", r"[A-Za-z0-9]{36}", "prefect-key"),
    Pattern("planetscale-token", re.compile(r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,64}")),
    token("sbp_", r"[a-f0-9]{40}", "supabase-key"),
    token("sb_secret_", r"[A-Za-z0-9_-]{31}", "supabase-key"),
    token("rnd_", r"[A-Za-z0-9]{32}", "render-key", valid=_random_looking),
    token("nfp_", r"[A-Za-z0-9]{36}", "netlify-token"),
    token("fo1_", r"[A-Za-z0-9_-]{43}", "fly-token"),
    token("FlyV1 ", r"fm[12][a-z]?_[A-Za-z0-9+/=_,-]{40,3000}", "fly-token", tail=None, in_runs=False),
    token("bkua_", r"[a-f0-9]{40}", "buildkite-token"),
    Pattern("grafana-token", re.compile(r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}")),
    token("glc_", r"eyJ[A-Za-z0-9+/=_-]{60,400}", "grafana-token", tail=None),
    token("rubygems_", r"[a-f0-9]{48}", "rubygems-key"),
    token("oy2", r"[a-z0-9]{43}(?![A-Za-z0-9])", "nuget-key", valid=lambda v: HAS_DIGIT.search(v[3:]) is not None),
    Pattern("postman-key", re.compile(r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}")),
    Pattern("dynatrace-token", re.compile(r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}")),
    Pattern("newrelic-key", re.compile(r"NR(?:AK|JS|II|AA)-[A-Za-z0-9]{19,32}")),
    Pattern("sentry-dsn", re.compile(r"https?://([0-9a-f]{32})(?::[0-9a-f]{32})?@[A-Za-z0-9.-]{0,100}sentry"),
            tail=None, needles=("sentry",)),
    token("sntryu_", r"[a-f0-9]{64}", "sentry-token"),
    token("sntrys_", r"eyJ[A-Za-z0-9+/=_-]{40,600}", "sentry-token", tail=None),
    # chat, work tools
    token("xapp-", r"[0-9]{1,2}-[A-Z0-9]{8,12}-[0-9]{8,16}-[A-Za-z0-9]{32,64}", "slack-token"),
    Pattern("slack-token", re.compile(r"xoxe(?:\.xox[bp])?-[0-9]-[A-Za-z0-9]{100,300}")),
    Pattern("teams-webhook", needles=(".webhook.office.com/",), regex=re.compile(
        r"https://[A-Za-z0-9-]{1,60}\.webhook\.office\.com/webhookb2/[A-Za-z0-9@-]{40,100}/IncomingWebhook/"
        r"[a-f0-9]{32}/[A-Za-z0-9-]{36}")),
    token("lin_", r"(?:api|oauth)_[A-Za-z0-9]{40}", "linear-key"),
    token("secret_", r"[A-Za-z0-9]{43}(?![A-Za-z0-9_])", "notion-token", valid=_random_looking),
    token("ntn_", r"[0-9]{11}[A-Za-z0-9]{35}", "notion-token"),
    token("figd_", r"[A-Za-z0-9_-]{40}", "figma-token"),
    token("CFPAT-", r"[A-Za-z0-9_-]{43}", "contentful-token"),
    Pattern("airtable-token", re.compile(r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}")),
    token("AAAAAAAAAAAAAAAAAAAAA", r"[A-Za-z0-9%]{60,200}", "twitter-bearer", valid=_random_looking),
    token("sk.eyJ", r"[A-Za-z0-9_-]{20,200}\.[A-Za-z0-9_-]{20,100}", "mapbox-token"),
    # payments
    token("whsec_", r"[A-Za-z0-9+/=]{24,64}", "stripe-key", tail=None),
    token("EAAA", r"[A-Za-z0-9_-]{60}", "square-token", valid=_random_looking),
    Pattern("square-token", re.compile(r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}")),
    Pattern("braintree-token", re.compile(r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}")),
    token("shippo_", r"(?:live|test)_[a-f0-9]{40}", "shippo-token"),
    # LLM providers
    token("gsk_", r"[A-Za-z0-9]{52}", "groq-key"),
    token("r8_", r"[A-Za-z0-9]{37}", "replicate-token", valid=_random_looking),
    token("pplx-", r"[A-Za-z0-9]{48}", "perplexity-key"),
    token("xai-", r"[A-Za-z0-9]{80}", "xai-key"),
    Pattern("langsmith-key", re.compile(r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}")),
    token("tvly-", r"(?:dev-|prod-)?[A-Za-z0-9]{32}", "tavily-key"),
    # signed and encrypted token standards besides JOSE; encoded credentials
    Pattern("paseto", re.compile(r"v[1-4]\.(?:local|public)\.[A-Za-z0-9_-]{30,20000}(?:\.[A-Za-z0-9_-]{1,2000})?"),
            tail=None, needles=(".local.", ".public.")),
    token("gAAAAA", r"[A-Za-z0-9_-]{80,20000}={0,2}", "fernet-token", tail=None),
    Pattern("docker-auth", re.compile(r"\"auth\"[ \t]{0,4}:[ \t]{0,4}\"([A-Za-z0-9+/]{8,2000}={0,2})\""), tail=None,
            valid=_basic_auth),
    Pattern("private-key", re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,40000}={0,2}"), tail=None,
            valid=_encoded_private_key),
]

OWN_PATTERNS: list[Pattern] = [
    token("sk-ant-", r"[a-z]{2,10}[0-9]{0,3}-[A-Za-z0-9_-]{20}", "anthropic-key"),
    token("sk-", r"(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20}", "openai-key"),
    token("sk-", r"[A-Za-z0-9_-]{0,200}T3BlbkFJ[A-Za-z0-9_-]{20}", "openai-key"),  # the marker every OpenAI key has
    token("sk-or-v1-", r"[0-9a-f]{64}", "openrouter-key"),
    token("github_pat_", r"[A-Za-z0-9_]{60}", "github-token"),
    Pattern("stripe-key", re.compile(r"k_(?:live|test)_(?<=[rs]k_live_|[rs]k_test_)[A-Za-z0-9]{20}"), lead="rs",
            lead_max=1),
    token("AIza", r"[0-9A-Za-z_-]{35}", "google-api-key"),
    token("hf_", r"[A-Za-z]{30}", "huggingface-token", valid=_mixed_case),
    token("npm_", r"[A-Za-z0-9]{36}", "npm-token"),
    Pattern("npm-token", re.compile(r":_authToken=[ \t]{0,4}([^\s\"']{8,400})"), tail=None, in_runs=False,  # .npmrc
            valid=lambda value: not (_placeholder(value) or TEMPLATE.search(value))),
    Pattern("digitalocean-token", re.compile(r"_v1_(?<=do[opr]_v1_)[0-9a-f]{64}"), lead="dopr", lead_max=3),
    token("HRKU-", r"[A-Za-z0-9_-]{40}", "heroku-key"),
    Pattern("shopify-token", re.compile(r"shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}")),
    token("key-", r"[0-9a-f]{32}(?![0-9a-f])", "mailgun-key"),
    Pattern("mailgun-key", re.compile(r"-(?<=[0-9a-f]{32}-)[0-9a-f]{8}-[0-9a-f]{8}(?![0-9a-f])"), tail=None,
            lead="0123456789abcdef", lead_max=32),
    Pattern("telegram-token", re.compile(r":(?<=[0-9]{8}:)[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), tail=None,
            lead="0123456789", lead_max=10),
    Pattern("discord-webhook", needles=("/api/webhooks/",), regex=re.compile(
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,25}/[A-Za-z0-9_-]{20}")),
    token("winni_", r"[A-Za-z0-9_-]{40}", "winni-token", valid=_random_looking),
    token("AGE-SECRET-KEY-1", r"[0-9A-Z]{58}", "age-secret-key"),
    # JWS (header.payload.signature) and JWE (five parts): a base64 JSON header, so it starts with eyJ.
    token("eyJ", r"[A-Za-z0-9_-]{2,1000}\.[A-Za-z0-9_-]{0,8000}\.[A-Za-z0-9_-]{0,1000}"
                 r"(?:\.[A-Za-z0-9_-]{1,20000}\.[A-Za-z0-9_-]{1,1000})?", "jwt", tail=None, valid=lambda v: _jose(v)),
    *HOSTED_SERVICE_PATTERNS,
]

PATTERNS = LIBRARY_PATTERNS + OWN_PATTERNS


# Every token lies in a run of these characters, and so does its needle: the needles are looked
# for in the text's long runs only, a fraction of ordinary text (prose, code) at a fraction of the cost.
RUN = re.compile(r"[A-Za-z0-9_.~$+/=%:;@?&#!*,-]{16,}")


def _token_spans(text: str, lowered: bytes) -> Iterable[tuple[int, int, str]]:
    runs = " ".join(RUN.findall(text))
    for pattern in PATTERNS:
        if pattern.needles and not any(needle in (runs if pattern.in_runs else text) for needle in pattern.needles):
            continue
        if pattern.gate is not None and not pattern.gate.search(lowered):
            continue
        for match in pattern.regex.finditer(text):
            # A capturing group is the secret (AWS's '<40 chars>' after "aws…key"), unless it is a mere
            # prefix like GitLab's optional "ab_".
            start, end = match.span(1) if match.re.groups and len(match.group(1) or "") >= 8 else match.span()
            if pattern.lead:
                while start > match.start() - pattern.lead_max and start > 0 and text[start - 1] in pattern.lead:
                    start -= 1
            if (start == match.start() or pattern.lead) and start > 0 and WORD_CHAR.match(text, start - 1):
                continue  # inside a longer word or base64 blob: not a token of its own
            if text.startswith("AccountKey=", start):  # the Azure pattern includes the label: keep it
                start += len("AccountKey=")
            if pattern.tail is not None:
                tail = pattern.tail.match(text, end)
                assert tail is not None  # a tail may be empty ({0,n}): it always matches
                end = tail.end()
            if pattern.valid is None or pattern.valid(text[start:end]):
                yield start, end, pattern.kind


# ---- PEM private keys ------------------------------------------------------------------------

PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[23]: [^\n]{0,100}")
PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}-----")
# The base64 lines (and "Proc-Type: …" headers) after BEGIN, raw or JSON/\n-escaped: the key's
# extent when a paste was cut off before its END line.
PEM_BODY = re.compile(r"(?:(?:\\r|\\n|\s|\"|'){1,16}(?:[A-Za-z0-9+/=]{16,200}|[A-Za-z-]{1,40}: [^\n\\]{1,200}))*")


def _pem_spans(text: str) -> Iterable[tuple[int, int, str]]:
    position = 0
    while match := PEM_BEGIN.search(text, position):
        body = PEM_BODY.match(text, match.end())
        assert body is not None  # the body may be empty (*): it always matches
        if body.end() > match.end():  # a header alone (in docs, in code that looks for keys) hides nothing
            end = PEM_END.search(text, body.end(), body.end() + 100)  # right after the body (its last short line)
            stop = end.end() if end else body.end()
            yield match.start(), stop, "private-key"
        position = max(match.end(), body.end())


# ---- passwords in URLs and Authorization headers ---------------------------------------------

URL_PASSWORD = re.compile(
    r"://[^\s:/?#@\[\]\"'`<>]{0,128}:(?P<password>[^\s/?#\"'`<>]{1,256})@(?=[A-Za-z0-9\[._-])")
AUTH_HEADER = re.compile(
    r"(?i:authorization)[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?(?i:bearer|token|basic|bot)[ \t]{1,4}"
    r"(?P<credential>[A-Za-z0-9._~+/=-]{8,4000})")
PLACEHOLDER_WORDS = {
    "password", "passwd", "pass", "pwd", "pw", "secret", "token", "changeme", "example", "redacted", "hidden",
    "yourpassword", "your-password", "your_password", "mypassword", "placeholder", "none", "null", "undefined",
}


def _placeholder(value: str) -> bool:
    """`${VAR}`, `$VAR`, `<password>`, `{{ secret }}`, `%(pw)s`, `***`, `xxxx`, `…` or a word that
    names the thing instead of being it."""
    if value.startswith(("$", "<", "{", "[")) or value.lower() in PLACEHOLDER_WORDS:
        return True
    stripped = value.strip("*x.X…•-_")
    return not stripped


# Passwords on command lines and in ~/.pgpass.
COMMAND_PASSWORDS = (  # (gate on the lowercased text, pattern)
    # curl -u user:password (wget's --password=… is a named value)
    (re.compile(rb"\s(?:-u|--user)"),
     re.compile(r"-(?:u(?<=\s-u)|-user(?<=\s--user))[ =]?(?P<q>['\"]?)[^\s:'\"`]{1,128}:(?P<password>[^\s'\"`]{1,4096})")),
    # mysql -pSECRET / -p'SECRET'
    (re.compile(rb" -p"),
     re.compile(r"(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,200}?\s-p(?P<q>['\"]?)(?P<password>[^\s'\"`]{1,4096})")),
    # docker login -p SECRET
    (re.compile(rb"docker login"),
     re.compile(r"docker login\b[^\n]{0,200}?\s(?:-p|--password)[ =](?P<q>['\"]?)(?P<password>[^\s'\"`]{1,4096})")),
    # ~/.pgpass: host:port:database:user:password
    (None, re.compile(r"(?m)^[^\s:#]{1,253}:(?:[0-9]{1,5}|\*):[^\s:]{1,128}:[^\s:]{1,128}:(?P<password>[^\s`]{1,4096})$")),
)


# Cookies: every value of a Cookie / Set-Cookie header (or curl's --cookie) that looks random.
# (matched right after the word "cookie", which a literal search on the lowercased text finds)
COOKIE_WORD = re.compile(rb"cookie")
COOKIE_HEADER = re.compile(r"[\"']?(?:[ \t]{0,4}[:=]|[ \t]{1,4}[\"'])[ \t]{0,4}[\"']?(?P<cookies>[^\r\n\"']{1,8000})")
COOKIE_PAIR = re.compile(r"[ \t]{0,4}(?P<name>[A-Za-z0-9_.!#$%&*+^|~-]{1,100})=(?P<value>[^;\s,\"'\\]{16,4000})")
COOKIE_ATTRIBUTES = {"expires", "path", "domain", "max-age", "samesite", "priority", "partitioned"}
# A Kubernetes Secret's `data:` block: every value is a base64-encoded secret.
SECRET_DATA = re.compile(r"(?m)^(?P<indent>[ \t]*)data:[ \t]*\r?\n")
SECRET_DATA_ITEM = re.compile(r"(?P<indent>[ \t]+)[\"']?[A-Za-z0-9_.-]{1,253}[\"']?:[ \t]+[\"']?"
                              r"(?P<value>[A-Za-z0-9+/]{8,60000}={0,2})[\"']?[ \t]*(?:\r?\n|$)")
# A JWT cut into lines (a wrapped terminal, a folded log, a string concatenated over lines): its
# first piece ends a line, each next line holds nothing but the following piece.
JWT_HEAD = re.compile(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,1000}(?:\.[A-Za-z0-9_-]{0,8000}){0,4}")
JWT_PIECE = re.compile(r"[\"' \t+,\\]{0,6}(?:\\r\\n|\\n|\r?\n)[ \t>|\"'+]{0,12}(?P<piece>[A-Za-z0-9_.-]{8,8000})"
                       r"(?=[\"' \t,;)\]}+\\]{0,6}(?:\\n|\r?\n|$))")


def _cookie_spans(text: str, lowered: bytes) -> Iterable[tuple[int, int, str]]:
    resume = 0
    for word in COOKIE_WORD.finditer(lowered):
        if word.start() < resume or not (header := COOKIE_HEADER.match(text, word.end())):
            continue  # (a "cookie" inside a header already read is one of its values)
        position, stop = header.start("cookies"), header.end("cookies")
        resume = stop
        while position < stop:
            pair, semicolon = COOKIE_PAIR.match(text, position, stop), text.find(";", position, stop)
            position = stop if semicolon < 0 else semicolon + 1
            if pair is None:
                continue
            value = pair.group("value")
            if pair.group("name").lower() not in COOKIE_ATTRIBUTES and not _placeholder(value) and (
                    _mixed_case(value) or HAS_DIGIT.search(value)) and not TEMPLATE.search(value):
                yield *pair.span("value"), "cookie"


def _secret_data_spans(text: str) -> Iterable[tuple[int, int, str]]:
    for block in SECRET_DATA.finditer(text):
        position, indent = block.end(), None
        while item := SECRET_DATA_ITEM.match(text, position):
            if indent is None:
                indent = item.group("indent")
                if len(indent) <= len(block.group("indent")):
                    break
            elif item.group("indent") != indent:
                break
            value = item.group("value")
            if len(value) % 4 == 0 and (_mixed_case(value) or HAS_DIGIT.search(value)):  # base64, always padded
                yield *item.span("value"), "k8s-secret-data"
            position = item.end()


# The last piece may end mid-line (`… ttl=3600`) when the signature's length says it is still short.
JWT_LAST_PIECE = re.compile(JWT_PIECE.pattern.rsplit("(?=", 1)[0] + "(?![A-Za-z0-9_.-])")
RSA_SIGNATURE = {342, 512, 683}  # 2048-, 3072- and 4096-bit keys
SIGNATURE_LENGTHS = {"HS256": {43}, "HS384": {64}, "HS512": {86}, "ES256": {86}, "ES384": {128}, "ES512": {176},
                     "EdDSA": {86}, **{f"{family}{bits}": RSA_SIGNATURE for family in ("RS", "PS") for bits in (256, 384, 512)}}


def _signature_lengths(joined: str) -> set[int] | None:
    """The lengths a JWS's signature may have, by its header's `alg` (None when unknown)."""
    header = _json_object(joined.split(".", 1)[0]) if 1 <= joined.count(".") <= 2 else None
    return SIGNATURE_LENGTHS.get(str(header.get("alg"))) if header else None


def _split_jwt_spans(text: str) -> Iterable[tuple[int, int, str]]:
    position = 0
    while head := JWT_HEAD.search(text, position):
        pieces, end = [head.group()], head.end()
        while len(pieces) < 40:
            joined = "".join(pieces)
            lengths = _signature_lengths(joined)
            if lengths and joined.count(".") == 2 and len(joined.rsplit(".", 1)[1]) in lengths:
                break  # whole
            piece = JWT_PIECE.match(text, end) or (JWT_LAST_PIECE.match(text, end) if lengths else None)
            if piece is None:
                break
            pieces.append(piece.group("piece"))
            end = piece.end()
        joined = "".join(pieces)
        if len(pieces) > 1 and joined.count(".") in (2, 4) and _jose(joined):
            yield head.start(), end, "jwt"
        position = end  # the pieces read belong to this run, whatever it turned out to be


def _credential_spans(text: str, lowered: bytes) -> Iterable[tuple[int, int, str]]:
    if b"cookie" in lowered:
        yield from _cookie_spans(text, lowered)
    if b"kind: secret" in lowered:
        yield from _secret_data_spans(text)
    if b"eyj" in lowered:
        yield from _split_jwt_spans(text)
    for match in URL_PASSWORD.finditer(text):
        if not _placeholder(match.group("password")):
            yield *match.span("password"), "password-in-url"
    if b"authorization" in lowered:
        for match in AUTH_HEADER.finditer(text):
            credential = match.group("credential")
            if len(credential) >= 16 and (_mixed_case(credential) or HAS_DIGIT.search(credential)):
                yield *match.span("credential"), "bearer-token"
    for command, regex in COMMAND_PASSWORDS:
        if command is not None and not command.search(lowered):
            continue
        for match in regex.finditer(text):
            password = match.group("password")
            if not _placeholder(password) and len(password) >= 4 and not password.startswith("//"):
                yield *match.span("password"), "password"


# ---- values of secret-named keys -------------------------------------------------------------

# The secret words, found on the ASCII-lowercased text (a literal alternation the regex engine
# skips to quickly), then the key name around the word, an assignment and the value.
SECRET_WORD = re.compile(rb"key|secret|token|pass|pwd|credential")
VALUE_MAX = 300
VARIANT = r"(?:[0-9]{1,3}|v[0-9]{1,2}|prod|production|dev|development|staging|stage|live|test|ro|rw|old|new|backup)"
NAMED = re.compile(
    r"(?i:key|secret|token|passw(?:or)?d|passphrase|pass|pwd|credential)s?"
    rf"(?i:[_.-]?{VARIANT})?"  # API_KEY_2, DB_PASSWORD_PROD
    r"(?P<closing>[\"']?)[ \t]{0,4}(?P<op>:=|=>|=|:|,|\|\||\?\?|>|[ \t])[ \t]{0,4}"
    r"(?P<quote>[\"'`]?)(?P<value>[^\s\"'`]{8,%d})" % VALUE_MAX)
LONG_VALUE = re.compile(r"[^\s\"'`,;]{0,8000}")
LONG_QUOTED_VALUE = re.compile(r"[^\s\"'`]{0,8000}")
NAME_CHAR = re.compile(r"[A-Za-z0-9_.-]")
# Kubernetes env lists: "- name: DB_PASSWORD" and on the next line "value: …"
NAME_VALUE_PAIR = re.compile(
    r"name:[ \t]*[\"']?(?P<name>[A-Za-z0-9_.-]{1,80})[\"']?[ \t]*\r?\n[ \t]*-?[ \t]*value:[ \t]*"
    r"(?P<quote>[\"']?)(?P<value>[^\s\"']{8,%d})" % VALUE_MAX)
NAME_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# A key name is secret-named when its last word ends in one of these (apiKey, SECRET_KEY,
# secretaccesskey, DB_PASSWORD, refresh_token, clientSecret), except English words that happen to.
SECRET_SUFFIXES = ("key", "secret", "token", "password", "passwd", "pwd", "passphrase", "credential",
                   "credentials")
ENGLISH_KEY_WORDS = {"monkey", "turkey", "hockey", "whiskey", "donkey", "jockey", "lackey", "hotkey", "passkey"}
# The word before it says the key or token is not a credential.
NOT_SECRET_QUALIFIERS = {
    "public", "publishable", "pub", "cache", "sort", "primary", "foreign", "partition", "idempotency", "dedup",
    "lookup", "map", "dict", "group", "order", "index", "row", "column", "field", "unique", "natural", "composite",
    "hash", "object", "routing", "sharding", "shard", "message", "translation", "i18n", "label", "hot", "short",
    "shortcut", "keyboard", "next", "page", "pagination", "continuation", "cursor", "sync", "max", "min", "num",
    "count", "ttl", "expiry", "type", "name", "length", "size", "prefix", "file", "path", "dir", "url", "uri",
    "id", "header", "param", "foo", "test", "dummy", "fake", "example", "sample",
}
VARIANT_PART = re.compile(VARIANT)


def _secret_name(name: str) -> bool:
    parts = [p.lower() for p in NAME_PARTS.findall(name)]
    while len(parts) > 1 and VARIANT_PART.fullmatch(parts[-1]):
        parts.pop()
    if not parts or parts in (["key"], ["keys"]):
        return False  # a bare "key" is a dictionary key far more often than a credential
    last = parts[-1]
    if last not in ("pass", "dbpass", "adminpass", "keys") and (
            not last.endswith(SECRET_SUFFIXES) or last in ENGLISH_KEY_WORDS):
        return False
    return not (len(parts) > 1 and parts[-2] in NOT_SECRET_QUALIFIERS)


# What may stand before an environment variable's name: a shell history number, `export`, a YAML list dash.
ENV_LINE_START = re.compile(r"[ \t]*(?:\d+[ \t]+)?(?:export[ \t]+|-[ \t]+)?")
# settings.SECRET_KEY, os.environ, self.api_key: identifiers as people write them (snake_case,
# UPPER_CASE, CamelCase, camelCase), not random mixes like "tu_b.RR1RawAFbUh"
IDENTIFIER = r"(?:[a-z_][a-z0-9_]*|[A-Z_][A-Z0-9_]*|_?[A-Z]?[a-z0-9]+(?:[A-Z][a-z0-9]+)*)"
DOTTED_NAME = re.compile(rf"{IDENTIFIER}(?:\.{IDENTIFIER})+")
IDENTIFIER_WORD = re.compile(IDENTIFIER)
# get_password(), os.environ.get(, Optional[str], (module.NAME, C:\\keys\\…, ApiToken)
# (a call's arguments hold names and literals, not the !%@* of a random key such as "r29(f)=h-9p+…")
CODE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*[(\[][A-Za-z0-9_.,=:()\[\]-]*|\([A-Za-z_][A-Za-z0-9_.]*,?|[A-Za-z]:\\.*"
                  r"|[A-Za-z_][A-Za-z_.]*[)\]]{1,3}[,:;]?")  # a name (no digits) closing a call: `token: ApiToken)`
# "{{ secret }}", "${DB_PASSWORD}", "%(password)s", "$DB_PASS", f"…{PASSWORD}…", f"…{rand(…"
TEMPLATE: re.Pattern[str] = re.compile(r"\$\{|\{\{|\}\}|%\([A-Za-z_][A-Za-z0-9_]*\)[sdr]|\$[A-Z_]{2}|\{[A-Za-z_][A-Za-z0-9_.]*[}(\[]")


PATH = re.compile(r"(?:~|\.{1,2})?(?:/[A-Za-z0-9_.@-]+){2,40}/?")
# A base64 secret may start with "/" and read as a path, a Vault token (`s.Wq8dKfZ3…`) as a dotted
# name; a path's or a name's parts are not 16+ random characters (two digits, both cases).
RANDOM_SEGMENT = re.compile(r"(?<![A-Za-z0-9+=])(?=[^/.]{0,40}[0-9][^/.]{0,40}[0-9])(?=[^/.]{0,40}[a-z])"
                            r"(?=[^/.]{0,40}[A-Z])[A-Za-z0-9+=]{16,}")
NUMBER = re.compile(r"[+-]?(?:0x[0-9a-fA-F_]+|0b[01_]+|0o[0-7_]+|[0-9][0-9_.]*(?:[eE][+-]?[0-9]+)?)")


def _secret_value(value: str) -> bool:
    """Looks like a credential: a digit among letters or symbols, a symbol with a capital, or
    mixed-case letters that are not a word or an identifier ("MangoUYZkT" but not "SecretStr");
    and not a placeholder, a call, a reference, a number or a path (`winni:worker:heartbeat`,
    `deploy/key.pem`, `CamelCaseName` are names, not secrets)."""
    if len(value) < 8:
        return False
    digit, upper = HAS_DIGIT.search(value) is not None, HAS_UPPER.search(value) is not None
    if not (digit or upper):
        return False
    lower, symbol = HAS_LOWER.search(value) is not None, HAS_SYMBOL.search(value) is not None
    if not ((digit and (lower or upper or symbol)) or (upper and symbol)
            or (upper and lower and not IDENTIFIER_WORD.fullmatch(value))):
        return False
    if _placeholder(value) or CODE.fullmatch(value) or TEMPLATE.search(value):
        return False
    return not (NUMBER.fullmatch(value) or value.startswith(("http://", "https://"))
                or ((DOTTED_NAME.fullmatch(value) or PATH.fullmatch(value)) and not RANDOM_SEGMENT.search(value)))  # settings.KEY, 0x57_494E, /run/secrets/db, a URL


def secret_named_value(name: str, value: str) -> bool:
    """A JSON object's string under a secret-named key that looks like a secret ({"password":
    "…"}): the key-value rule for structured data, whose strings are scrubbed one by one (each
    without the key beside it)."""
    value = value.strip()
    return (not value.startswith(("[REDACTED:", "[private]")) and len(value) <= 4 * VALUE_MAX
            and _secret_name(name) and _secret_value(value))


def _whole(text: str, start: int, value: str, quoted: bool) -> str:
    """A value that filled the pattern's cap runs on (an AWS session token is 700+ characters)."""
    if len(value) < VALUE_MAX:
        return value
    rest = (LONG_QUOTED_VALUE if quoted else LONG_VALUE).match(text, start + len(value))
    assert rest is not None  # the rest may be empty (*): it always matches
    return value + rest.group()


def _named_values(text: str, lowered: bytes) -> Iterable[tuple[str, int, int, bool]]:
    """(name, value start, value end, on an environment-style line) of every secret-named key with a
    secret-looking value."""
    resume = 0
    for word in SECRET_WORD.finditer(lowered):
        at = word.start()
        if at < resume or (word.group() == b"key" and (at == 0 or not NAME_CHAR.match(text, at - 1))):
            continue  # a bare "key" is a dictionary key far more often than a credential
        if not (match := NAMED.match(text, at)):
            continue
        op, closing, quote = match.group("op"), match.group("closing"), match.group("quote")
        begin = match.start()
        while begin > max(0, match.start() - 80) and NAME_CHAR.match(text, begin - 1) and not (
                text[begin - 2:begin - 1] == "\\" and text[begin - 1] in "nrt"):  # \n in JSON-escaped text
            begin -= 1
        name, before = text[begin:match.start("closing")], text[max(0, begin - 2):begin]
        if op in (",", "||", "??") and not quote:
            continue  # getenv("NAME", "default"), env.NAME || 'default': only a quoted default
        if op == "," and not (closing and before[-1:] == closing):
            continue
        closing_tag = text.find(f"</{name}>", match.start("value"), match.start("value") + 8200) if op == ">" else -1
        if op == ">" and not (before[-1:] == "<" and closing_tag > 0):
            continue  # only an XML element, <password>…</password>
        if op in (" ", "\t") and not (name.startswith("--") or name.lower() in ("password", "passwd")):
            continue  # --token VALUE, or netrc's "password VALUE"
        if before == "${":
            continue  # ${NAME:-default}: a shell expansion names the variable, its default is not the secret
        start = match.start("value")
        value = text[start:closing_tag] if op == ">" else match.group("value")
        if not quote:
            value = value.rstrip(",;")
        elif text.startswith((" % ", ".format("), match.end() + 1):
            continue  # "…%s…" % args: a format string
        if not (_secret_name(name) and _secret_value(value)):
            continue  # a value that is not the secret may still hold a secret-named key: go on inside it
        if op != ">":  # (an XML element's value already runs to its closing tag)
            value = _whole(text, start, value, bool(quote))
        resume = start + len(value)
        line_start = text.rfind("\n", 0, begin) + 1
        env_line = op in ("=", ":") and ENV_LINE_START.fullmatch(text, line_start, begin) is not None
        yield name, start, start + len(value), env_line
    if b"value:" in lowered:
        for match in NAME_VALUE_PAIR.finditer(text):
            if _secret_name(match.group("name")) and _secret_value(match.group("value")):
                value = _whole(text, match.start("value"), match.group("value"), bool(match.group("quote")))
                yield match.group("name"), match.start("value"), match.start("value") + len(value), True


def _named_spans(text: str, lowered: bytes, taken: list[tuple[int, int, str]]) -> Iterable[tuple[int, int, str]]:
    starts = [s for s, _, _ in taken]
    for name, start, end, env_line in _named_values(text, lowered):
        i = bisect.bisect_right(starts, end) - 1
        if i >= 0 and taken[i][1] > start:
            continue  # already redacted by a more specific detector
        if "aws" in name.lower() and "secret" in name.lower():
            yield start, end, "aws-secret-key"
        else:
            yield start, end, "dotenv-secret" if env_line and name.upper() == name else "named-secret"


# ---- `<private>` spans -----------------------------------------------------------------------

PRIVATE_TAG = re.compile(r"<(/?)private[ \t]*>", re.IGNORECASE)


def drop_private(text: str) -> tuple[str, int]:
    """`<private>…</private>` → `[private]`; nested tags close with their outermost partner; an
    unclosed tag hides the rest of the text; a stray closing tag is left as it is; a tag written
    in backticks (documentation, like this line) is a mention, not a use."""
    out, depth, start, last, spans = [], 0, 0, 0, 0
    for tag in PRIVATE_TAG.finditer(text):
        if text[tag.start() - 1:tag.start()] == "`" or text[tag.end():tag.end() + 1] == "`":
            continue
        if not tag.group(1):
            if depth == 0:
                start = tag.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                out += [text[last:start], PRIVATE]
                last, spans = tag.end(), spans + 1
    if depth:
        out += [text[last:start], PRIVATE]
        last, spans = len(text), spans + 1
    out.append(text[last:])
    return ("".join(out), spans) if spans else (text, 0)


# ---- the entry point -------------------------------------------------------------------------

def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Sorted, non-overlapping; where spans overlap the longest earliest one absorbs the others."""
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if merged and start < merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end, merged[-1][2])
            continue
        merged.append((start, end, kind))
    return merged


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, type) of every secret in `text`, sorted and non-overlapping."""
    # One byte per character (non-ASCII becomes "?"), so positions match the text's.
    lowered = text.encode("ascii", "replace").lower()
    spans = _merge([*_pem_spans(text), *_token_spans(text, lowered), *_credential_spans(text, lowered)])
    return _merge([*spans, *_named_spans(text, lowered, spans)])


def scrub(text: object, *, enabled: bool = True) -> ScrubResult:
    """`text` with `<private>` spans dropped and, when `enabled` (WINNI_SCRUB), secrets redacted."""
    text, private = drop_private(_as_text(text))
    if not enabled or not text:
        return ScrubResult(text, {}, private)
    spans = find_secrets(text)
    if not spans:
        return ScrubResult(text, {}, private)
    out: list[str] = []
    counts: dict[str, int] = {}
    last = 0
    for start, end, kind in spans:
        out += [text[last:start], redaction(kind)]
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    out.append(text[last:])
    return ScrubResult("".join(out), counts, private)
