"""Strip secrets and personal paths from a paste before it is quoted, stored or logged: the one function
every text taken from a paste goes through (`redact`). Rules follow detect-secrets' (tested against it)."""

from __future__ import annotations

import base64
import binascii
import re

REDACTED = "[redacted]"

# Code points a str may hold but no encoder writes (PostgreSQL refused the row), and NUL, which PostgreSQL's
# text type cannot hold at all.
_UNWRITABLE = re.compile("[\x00\ud800-\udfff]")
# A key block, or everything after its header when the paste was cut before the END line.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_SECRETS = (
    re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{8,}"),  # Slack tokens
    re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"),
    re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"),  # GitLab
    re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),  # AWS access key ids
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),  # API keys in the OpenAI style
    re.compile(r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{10,}"),  # Stripe
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),  # Google API keys
    re.compile(r"\bGOCSPX-[A-Za-z0-9_-]{20,}"),  # Google OAuth client secrets
    re.compile(r"\b[MNO][A-Za-z\d_-]{23,27}\.[\w-]{6,7}\.[\w-]{27,40}\b"),  # Discord bot tokens
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),  # Hugging Face tokens
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),
    re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}"),
    re.compile(r"\bSG\.[\w-]{16,32}\.[\w-]{30,50}"),  # SendGrid
    re.compile(r"\bSK[0-9a-fA-F]{32}\b"),  # Twilio
    re.compile(r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),  # Mailchimp
    re.compile(r"\b[0-9]{8,10}:[A-Za-z0-9_-]{35}\b"),  # Telegram bots
    re.compile(r"\beyJ[A-Za-z0-9_=-]{4,}\.[A-Za-z0-9_=-]{2,}(?:\.[A-Za-z0-9_+/=-]*)?"),  # JSON web tokens
    re.compile(r"(?i)\bBearer\s+[\w.~+/=-]{8,}"),
)
# `Basic <base64 of user:password>` outside a header too; only when it decodes to a credential, so the word
# "Basic" before an ordinary word is left alone.
_BASIC = re.compile(r"(?i)\b(Basic\s+)([A-Za-z0-9+/]{6,}={0,2})(?![\w+/=])")
# `name = value`, `name: value`, `"name": "value"`, `NAME=value`: an assignment whose name says secret. Only
# the name is consumed (the rest is a lookahead), so `failed: password: x` still finds `password`.
_ASSIGNMENT = re.compile(
    r"""(?<![\w.-])(?P<name>[A-Za-z_][\w.-]*+)(?=(?P<sep>["']?[ \t]*[=:][ \t]*)"""
    r"""(?P<scheme>(?i:bearer|basic|token|digest)[ \t]+)?"""
    r"""(?:"(?P<dq>[^"\n]{0,1024})"|'(?P<sq>[^'\n]{0,1024})'|(?P<bare>[^\s"'`,;&<>()\[\]{}]{1,256})))"""
)
# The look-ahead sees at most 256 characters of a bare value (it runs at every name: unbounded, a long run of
# `a:a:a:...` would be quadratic); a secret's value is then taken whole.
_BARE_VALUE = re.compile(r"""[^\s"'`,;&<>()\[\]{}]++""")
# Names whose value (4 characters or more) is a secret whatever it looks like: passwords are often words...
_SECRET_NAME = re.compile(
    r"(?:password|passwd|passphrase|secret|token|api_?key|access_?key|private_?key|credentials?|"
    r"authorization)$"
)
# ...and names whose value is a secret when it looks random (`pwd=/src/app` is a directory).
_MAYBE_SECRET_NAME = re.compile(r"(?:key|auth|pwd|sig|signature|session|cookie)$")
_MIN_SECRET = 4
_HAS_DIGIT = re.compile(r"\d")
_HAS_LETTER = re.compile(r"[A-Za-z]")
# Credentials in URLs: postgres://user:secret@host, redis://:secret@host.
# A scheme is matched from the start of its run only: `a.a.a...` must not be rescanned from every letter.
_URL_PASSWORD = re.compile(r"((?<![\w+.-])[a-zA-Z][\w+.-]*+://[^/\s:@]*+:)[^@\s/]++@")
_HOME = re.compile(r"(?i)(/home/|/Users/)([^/\\\s:'\"]+)")
# Windows user folders may hold spaces ("C:\Users\Ana Smith\...").
_WINDOWS_HOME = re.compile(r"(?i)([A-Z]:[\\/]+Users[\\/]+)([^\\/:'\"\n]+)")


def _looks_random(value: str) -> bool:
    """A token-like value: letters and digits mixed, or long; not a word such as `Comma` or `true`."""
    if len(value) >= 24:
        return True
    return len(value) >= 8 and bool(_HAS_DIGIT.search(value)) and bool(_HAS_LETTER.search(value))


def _secret_value_span(match: re.Match[str]) -> tuple[int, int] | None:
    """Where the value of an assignment is, when its name says it is a secret (and, for a name such as
    `*_KEY`, it looks like one)."""
    group = next(name for name in ("dq", "sq", "bare") if match[name] is not None)
    value = match[group]
    if not value or value.startswith(REDACTED):
        return None
    name = match["name"].lower().replace("-", "_").replace(".", "_")
    always = _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET
    if not (always or (_MAYBE_SECRET_NAME.search(name) and _looks_random(value))):
        return None
    start, end = match.span(group)
    if group == "bare":
        whole = _BARE_VALUE.match(match.string, start)
        end = whole.end() if whole else end
    return start, end


def _redact_assignments(text: str) -> str:
    parts: list[str] = []
    done = 0
    for match in _ASSIGNMENT.finditer(text):
        if match.start() < done:
            continue  # inside a value already redacted
        span = _secret_value_span(match)
        if span is not None:
            parts += [text[done : span[0]], REDACTED]
            done = span[1]
    return "".join(parts) + text[done:] if parts else text


def _basic(match: re.Match[str]) -> str:
    try:
        decoded = base64.b64decode(match[2] + "=" * (-len(match[2]) % 4), validate=True)
    except (binascii.Error, ValueError):
        return match.group()
    return match[1] + REDACTED if b":" in decoded else match.group()


def redact(text: str) -> str:
    """The text with tokens, keys, passwords and home-directory user names replaced, and the code points no
    database or encoder accepts (lone surrogates, NUL) removed. Paths keep their shape, so a redacted paste
    still looks up the same record."""
    text = _UNWRITABLE.sub("", text)
    text = _PRIVATE_KEY.sub(REDACTED, text)
    for pattern in _SECRETS:
        text = pattern.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _BASIC.sub(_basic, text)
    text = _redact_assignments(text)
    text = _WINDOWS_HOME.sub(lambda m: m.group(1) + "user", text)
    return _HOME.sub(lambda m: m.group(1) + "user", text)
