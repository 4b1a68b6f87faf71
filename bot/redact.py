"""Strip secrets and personal paths from a paste before it is stored or logged."""

from __future__ import annotations

import re

_SECRETS = (
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{8,}"),  # Slack tokens
    re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key ids
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),  # API keys in the OpenAI style
    re.compile(r"\b[MNO][A-Za-z\d]{23,25}\.[\w-]{6}\.[\w-]{27,38}\b"),  # Discord bot tokens
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),  # Hugging Face tokens
    re.compile(r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}"),  # JSON web tokens
    re.compile(r"(?i)\bBearer\s+[\w.~+/=-]{8,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL),
)
_ASSIGNED_SECRET = re.compile(
    r"(?i)\b((?:password|passwd|secret|token|api[_-]?key|authorization)\s*[=:]\s*)(?:Bearer\s+)?[^\s'\"]{4,}"
)
# Credentials in URLs: postgres://user:secret@host, redis://:secret@host.
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^/\s:@]*:)[^@\s/]+@")
_HOME = re.compile(r"(?i)(/home/|/Users/)([^/\\\s:'\"]+)")
# Windows user folders may hold spaces ("C:\Users\Ana Smith\...").
_WINDOWS_HOME = re.compile(r"(?i)([A-Z]:[\\/]+Users[\\/]+)([^\\/:'\"\n]+)")

REDACTED = "[redacted]"


def redact(text: str) -> str:
    """The text with tokens, keys and home-directory user names replaced. Paths keep their shape, so a
    redacted paste still looks up the same record."""
    for pattern in _SECRETS:
        text = pattern.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = _ASSIGNED_SECRET.sub(lambda m: m.group(1) + REDACTED, text)
    text = _WINDOWS_HOME.sub(lambda m: m.group(1) + "user", text)
    return _HOME.sub(lambda m: m.group(1) + "user", text)
