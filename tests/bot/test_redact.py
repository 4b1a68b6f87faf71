"""Secrets and personal paths never survive redaction; the panic still looks up the same."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.extract import extract_panics
from bot.redact import REDACTED, redact


def test_tokens_and_keys_are_removed() -> None:
    text = (
        "token xoxb-1234567890-abcdefghij and xapp-1-A0-123456789 ghp_abcdefghijklmnopqrstuvwxyz012345 "
        "AKIAABCDEFGHIJKLMNOP password=hunter22 Authorization: Bearer abc.def.ghi"
    )
    cleaned = redact(text)
    for secret in ("xoxb-1234567890", "xapp-1-A0", "ghp_abc", "AKIAABCD", "hunter22", "abc.def.ghi"):
        assert secret not in cleaned
    assert cleaned.count(REDACTED) == 6


def test_home_directories_lose_the_user_name_but_keep_the_path() -> None:
    paste = (
        "thread 'main' panicked at /home/ana.smith/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
        "burn-tensor-0.19.0/src/tensor/api/check.rs:58:17:\nboom\n"
        "at C:\\Users\\Ana Smith\\x.rs and /Users/bob/y.rs"
    )
    cleaned = redact(paste)
    assert "ana.smith" not in cleaned and "bob" not in cleaned and "Smith" not in cleaned
    assert "C:\\Users\\user\\x.rs" in cleaned
    before = extract_panics(paste)[0].location
    after = extract_panics(cleaned)[0].location
    assert before and after and before.path == after.path == "crates/burn-tensor/src/tensor/api/check.rs"


@given(st.text())
def test_redact_never_raises(text: str) -> None:
    assert isinstance(redact(text), str)


def test_urls_with_passwords_and_other_token_shapes() -> None:
    text = (
        "DATABASE_URL=postgres://admin:hunter2pass@db:5432/x redis://:pw0rd@cache:6379 "
        "OTk5OTk5OTk5OTk5OTk5OTk5.GfAkEt.abcdefghijklmnopqrstuvwxyz0123456 "
        "hf_abcdefghijklmnopqrstuvwxyz Authorization: Bearer eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4"
    )
    cleaned = redact(text)
    for secret in ("hunter2pass", "pw0rd", "OTk5OTk5", "hf_abc", "eyJhbGciOiJI", "SflKxwRJ"):
        assert secret not in cleaned, secret
    assert "postgres://admin:[redacted]@db:5432/x" in cleaned


# -- real secret formats, with detect-secrets as the reference ---------------------------------------------

# (case, text as it would be pasted, what must be gone besides what detect-secrets flags). Every value is made
# up in the real format; none is a live credential.
SECRET_TABLE: list[tuple[str, str, tuple[str, ...]]] = [
    ("aws-access-key-id", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", ("AKIAIOSFODNN7EXAMPLE",)),
    (
        "aws-secret-env",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",),
    ),
    (
        "aws-secret-json",
        '{"AccessKeyId": "ASIAY34FZKBOKMUTVV7A", '
        '"SecretAccessKey": "q8Yp2ZrD9xX3uV1sT0wK7mN4bL6cJ5hG8fE2dA1z"}',
        ("ASIAY34FZKBOKMUTVV7A", "q8Yp2ZrD9xX3uV1sT0wK7mN4bL6cJ5hG8fE2dA1z"),
    ),
    (
        "github-classic",
        "token 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",
        ("wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx",),
    ),
    (
        "github-fine-grained",
        "GITHUB_TOKEN=github_pat_11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW012",
        ("github_pat_11ABCDEFG0123456789abc",),
    ),
    ("github-app", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", ("16C7e42F292c6912E7710c838347Ae178B4a",)),
    (
        "slack-bot",
        "SLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        ("AbCdEfGhIjKlMnOpQrStUvWx",),
    ),
    (
        "slack-user",
        "xoxp-123456789012-123456789012-123456789012-0123456789abcdef0123456789abcdef",
        ("0123456789abcdef",),
    ),
    ("slack-app-level", "xapp-1-A0123456789-1234567890123-0123456789abcdef", ("A0123456789-1234567890123",)),
    ("slack-refresh", "xoxr-1-2-3-4-AbCdEf0123456789", ("AbCdEf0123456789",)),
    (
        "slack-webhook",
        "posting to https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/AbCdEfGhIjKlMnOpQrStUvWx failed",
        ("AbCdEfGhIjKlMnOpQrStUvWx",),
    ),
    ("stripe-live", "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'", ("4eC39HqLyjWDarjtT1zdp7dc",)),
    ("stripe-restricted", "rk_live_51H8a2bCdEfGhIjKlMnOpQrSt", ("51H8a2bCdEfGhIjKlMnOpQrSt",)),
    ("google-api-key", "GOOGLE_API_KEY=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", ("9tSrke72PouQMnMX",)),
    (
        "google-api-key-in-url",
        "GET https://maps.googleapis.com/x?key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        ("9tSrke72PouQMnMX",),
    ),
    (
        "jwt",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ("eyJzdWIiOiIxMjM0NTY3ODkwIn0", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ),
    (
        "jwt-bare-short-payload",
        "id_token: eyJhbGciOiJub25lIn0.e30.",
        ("eyJhbGciOiJub25lIn0",),
    ),
    (
        "private-key-rsa",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8PDDfhmmrGqfmK3p6tQ9G\n"
        "nZ0rT8bUuYxFq2W7cVd4k1eLm9aS5oJ3hN6gB2xC8vD0fE7iR4tY1uO3pK9l\n-----END RSA PRIVATE KEY-----",
        (
            "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi8PDDfhmmrGqfmK3p6tQ9G",
            "nZ0rT8bUuYxFq2W7cVd4k1eLm9aS5oJ3hN6gB2xC8vD0fE7iR4tY1uO3pK9l",
        ),
    ),
    (
        "private-key-openssh-cut-short",
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n",
        ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",),
    ),
    (
        "private-key-pgp",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0bWYwBCADhcX3nB8q2\n"
        "-----END PGP PRIVATE KEY BLOCK-----",
        ("lQOYBF0bWYwBCADhcX3nB8q2",),
    ),
    ("basic-auth-header", "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", ("dXNlcjpwYXNzd29yZDEyMw==",)),
    (
        "basic-auth-curl",
        'curl -H "Authorization: Basic YWRtaW46aHVudGVyMg==" http://x',
        ("YWRtaW46aHVudGVyMg==",),
    ),
    ("url-password", "DATABASE_URL=postgres://admin:s3cr3tpw@db.example.com:5432/x", ("s3cr3tpw",)),
    ("url-password-https", "git clone https://ferris:Tr0ub4dor3@git.example.com/repo.git", ("Tr0ub4dor3",)),
    (
        "discord-bot",
        "DISCORD_TOKEN=MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
        ("ZnCjm1XVW7vRze4b7Cq4se7kKWs",),
    ),
    ("db-password", "DB_PASSWORD=correct-horse-battery", ("correct-horse-battery",)),
    ("client-secret", "client_secret=Zx9vQ2mN4pL7kR1t", ("Zx9vQ2mN4pL7kR1t",)),
    ("password-yaml", "password: hunter2hunter", ("hunter2hunter",)),
    ("password-quoted", 'password: "correct horse battery staple"', ("correct horse battery staple",)),
    ("password-json", '{"user": "ferris", "password": "p@ss w0rd!"}', ("p@ss w0rd!",)),
    ("password-rust-debug", 'Config { host: "db", password: "hunter22", port: 5432 }', ("hunter22",)),
    (
        "generic-token",
        "MY_SERVICE_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        ("9f8e7d6c5b4a39281706f5e4d3c2b1a0",),
    ),
    ("generic-key", "export PAYMENTS_API_KEY=Q2x5VfP9rT7mW3zK8bN1", ("Q2x5VfP9rT7mW3zK8bN1",)),
    ("generic-secret", "WEBHOOK_SECRET='whsec_8Hn2Kq9Lz4Xv7Bc1'", ("whsec_8Hn2Kq9Lz4Xv7Bc1",)),
    (
        "header-api-key",
        "X-Api-Key: 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        ("3fa85f64-5717-4562-b3fc-2c963f66afa6",),
    ),
    (
        "azure-storage",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=lJzRc1YdHaAA2KCNJJ1tkYwF/+mKK6Ygw0NGe170Xu5"
        "92euJv2wYUtBlV8z+qnlcNQSnIYVTkLWntUO1F8j8rQ==;",
        ("lJzRc1YdHaAA2KCNJJ1tkYwF",),
    ),
    (
        "npm",
        "//registry.npmjs.org/:_authToken=npm_Abcdefghijklmnopqrstuvwxyz0123456789",
        ("Abcdefghijklmnopqrstuvwxyz0123456789",),
    ),
    (
        "openai",
        "OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        ("AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",),
    ),
    ("hugging-face", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", ("AbCdEfGhIjKlMnOpQrStUvWxYz012345",)),
    ("gitlab", "glpat-AbCdEfGhIjKlMnOpQrSt", ("AbCdEfGhIjKlMnOpQrSt",)),
    (
        "sendgrid",
        "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",
        ("TwL2iGABf9DHoTf",),
    ),
    (
        "telegram",
        "bot 110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw2 said",
        ("AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw2",),
    ),
]


def _flagged_by_detect_secrets(texts: list[str]) -> list[set[str]]:
    """What detect-secrets flags in each text, scanned as files of the kinds a paste resembles."""
    import tempfile
    from pathlib import Path

    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    # One row a "file", each row's lines kept together: a private key spans several lines.
    flagged: list[set[str]] = [set() for _ in texts]
    with tempfile.TemporaryDirectory() as folder, default_settings():
        for index, text in enumerate(texts):
            for suffix in ("txt", "yaml", "env", "py", "json"):
                path = Path(folder) / f"row{index}.{suffix}"
                path.write_text(text + "\n", encoding="utf-8")
                collection = SecretsCollection()
                collection.scan_file(str(path))
                flagged[index] |= {secret.secret_value for _, secret in collection if secret.secret_value}
    return flagged


def test_every_secret_detect_secrets_flags_is_gone_after_redaction() -> None:
    texts = [text for _, text, _ in SECRET_TABLE]
    flagged = _flagged_by_detect_secrets(texts)
    # The reference is really consulted: it knows most of these formats.
    assert sum(1 for found in flagged if found) >= len(SECRET_TABLE) // 2
    left: list[str] = []
    for (case, text, ours), found in zip(SECRET_TABLE, flagged, strict=True):
        cleaned = redact(text)
        assert REDACTED in cleaned, case
        for secret in sorted(found | set(ours)):
            if secret in cleaned:
                left.append(f"{case}: {secret!r} in {cleaned!r}")
        # Nothing detect-secrets would flag is left in what is posted or stored.
    assert left == []
    after = _flagged_by_detect_secrets([redact(text) for text in texts])
    assert [
        (case, sorted(found - {REDACTED}))
        for (case, _, _), found in zip(SECRET_TABLE, after, strict=True)
        if found - {REDACTED}
    ] == []


def test_panics_and_ordinary_words_are_left_alone() -> None:
    texts = [
        "thread 'main' panicked at src/parser.rs:12:5:\nunexpected character: Comma",
        "pwd=/src/app key: weight",
        "thread 'main' panicked at crates/burn-core/src/module/param.rs:88:9:\nmissing key: weight",
        "Basic operations are not supported for this tensor kind",
        'called `Result::unwrap()` on an `Err` value: InvalidToken { token: "fn" }',
        "auth: true, session: none",
        "index out of bounds: the len is 3 but the index is 7",
    ]
    for text in texts:
        assert redact(text) == text


def test_lone_surrogates_and_nul_are_stripped() -> None:
    assert redact("bad \ud800 paste\x00 \udfff here") == "bad  paste  here"
    # What comes out can always be encoded, so a database or a chat API takes it.
    redact("\ud83d\ude00 and \udcff").encode("utf-8")


@given(st.text(alphabet=st.characters(exclude_categories=()), max_size=200))
def test_redacted_text_always_encodes(text: str) -> None:
    redact(text).encode("utf-8")


def test_an_assignment_right_after_another_is_still_found() -> None:
    assert redact("login failed: password: hunter2hunter2") == "login failed: password: [redacted]"
    assert redact("error: client_secret=Zx9vQ2mN4pL7kR1t") == "error: client_secret=[redacted]"


@pytest.mark.parametrize("unit", ["a.", "a:", "a=b", 'a:"', "password=", "Basic ", "eyJ.", "-x"])
def test_redaction_time_grows_linearly(unit: str) -> None:
    """A paste may be an attachment of 256 KB: no pattern may rescan the rest of it from every position."""
    text = unit * (200_000 // len(unit))
    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 5.0
