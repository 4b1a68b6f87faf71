"""What a Discord reply quotes from a paste goes through `redact` first: the "no known record" reply quotes
the message (or the words typed) and the location, public in help channels, so no token, password, home
directory name or unencodable code point may ride along."""

from __future__ import annotations

import json

import pytest

from adapters.discord.render import no_match_message
from bot.extract import Location, Panic
from bot.matcher import LookupResult

SECRETS = (
    "hunter2hunter2",
    "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    "ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    "Zx9vQ2mN4pL7kR1t",
    "ana.smith",
)
PASTED = (
    "login failed: password: hunter2hunter2 "
    "DISCORD_TOKEN=MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs "
    "client_secret=Zx9vQ2mN4pL7kR1t in /home/ana.smith/app \udfff"
)


@pytest.mark.parametrize("where", ["message", "query"])
def test_no_known_record_quotes_the_paste_redacted(where: str) -> None:
    location = Location("/home/ana.smith/src/main.rs", "/home/ana.smith/src/main.rs", 3, 5)
    if where == "message":
        panic, query = Panic(PASTED, location), "thread 'main' panicked at ..."
    else:  # no message extracted: the words typed are quoted instead
        panic, query = Panic("", location), PASTED
    message = no_match_message(LookupResult((panic,), (), None, False), query=query)
    content = message.content or ""
    json.dumps({"content": content}, ensure_ascii=False).encode("utf-8")  # what goes over the wire encodes
    assert "[redacted]" in content
    for secret in SECRETS:
        assert secret not in content, secret
    assert "/home/user/src/main.rs:3:5" in content
