"""What a Slack reply quotes from a paste goes through `redact` first: the "no known record" reply quotes the
message (or the words typed) and the location, in threads and channels too, so no token, password, home
directory name or unencodable code point may ride along."""

from __future__ import annotations

import json

import pytest

from adapters.slack.render import no_match_message
from bot.extract import Location, Panic
from bot.matcher import LookupResult

SECRETS = (
    "hunter2hunter2",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKl",
    "AbCdEfGhIjKl",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "dXNlcjpwYXNzd29yZA==",
    "ana.smith",
)
PASTED = (
    "connection to db failed: DB_PASSWORD=hunter2hunter2 token xoxb-123456789012-1234567890123-AbCdEfGhIjKl "
    "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY "
    "Authorization: Basic dXNlcjpwYXNzd29yZA== "
    "in /home/ana.smith/app \ud800"
)


def everything(result: LookupResult, query: str) -> str:
    message = no_match_message(result, query=query)
    # What goes over the wire: it must encode (a lone surrogate made the Web API call fail).
    payload = json.dumps({"text": message.text, "blocks": message.blocks}, ensure_ascii=False)
    payload.encode("utf-8")
    return payload


@pytest.mark.parametrize("where", ["message", "query"])
def test_no_known_record_quotes_the_paste_redacted(where: str) -> None:
    location = Location("/home/ana.smith/src/main.rs", "/home/ana.smith/src/main.rs", 3, 5)
    if where == "message":
        panic = Panic(PASTED, location)
        query = "thread 'main' panicked at ..."
    else:  # no message extracted: the words typed are quoted instead
        panic = Panic("", location)
        query = PASTED
    payload = everything(LookupResult((panic,), (), None, False), query)
    assert "[redacted]" in payload
    for secret in SECRETS:
        assert secret not in payload, secret
    assert "/home/user/src/main.rs:3:5" in payload
