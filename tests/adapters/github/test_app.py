"""`panicbot serve github` end to end: signed deliveries to the service's real `POST /github/events`, the
bot's REST calls answered by a local fake of GitHub (tests/adapters/github/fake_github.py)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import logging
import socket
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters import outbox as outbox_module
from adapters.github import api as github_api
from adapters.github.app import delivery_job
from adapters.github.render import read_marker
from adapters.outbox import OutboxEntry
from adapters.serve.main import Service, ServiceSettings
from adapters.settings import PlatformRefused
from tests.adapters.github.fake_github import APP_ID, BOT_LOGIN, FakeGitHub, new_private_key, pem
from tests.support.local_only import isolate

SEEDS = Path(__file__).resolve().parents[3] / "bot" / "data" / "default_catalog.jsonl"
SECRET = "not-a-real-webhook-secret-0123456789"
STATIC_TOKEN = "ghp_NotARealTokenForOneRepository0000"
REPO = "tracel-ai/burn"
ELSEWHERE = "someone/elsewhere"
INSTALLATION = 77
USER = {"login": "ferris", "id": 501, "type": "User"}
AVG_POOL_ID = "8d1d2fa6df3880bd"
AVG_POOL_TITLE = "Can't differentiate avg pool 2d backward."
AVG_POOL_PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:1498:9:\n"
    f"{AVG_POOL_TITLE}\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
DEFORM_ID = "5c5da46720dbbf10"
DEFORM_TITLE = "Can't differentiate deform conv 2d backward."
DEFORM_PASTE = f"thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n{DEFORM_TITLE}"
KEY = new_private_key()
KEY_PEM = pem(KEY)
GITHUB_VARIABLES = (
    "GITHUB_WEBHOOK_SECRET",
    "GITHUB_APP_ID",
    "GITHUB_PRIVATE_KEY",
    "GITHUB_PRIVATE_KEY_FILE",
    "GITHUB_TOKEN",
    "GITHUB_AUTO_REPLY_REPOS",
    "GITHUB_AUTO_REPLY_PULL_REQUESTS",
    "GITHUB_APP_SLUG",
    "GITHUB_API_URL",
)
_ids = itertools.count(1)


# -- deliveries, shaped like GitHub's ---------------------------------------------------------------------


def issue_payload(
    action: str,
    body: str,
    *,
    number: int = 7,
    repo: str = REPO,
    sender: dict[str, Any] | None = None,
    updated_at: str | None = None,
) -> dict[str, Any]:
    issue = {"number": number, "title": "It crashes", "body": body, "user": USER, "state": "open"}
    if updated_at is not None:
        issue["updated_at"] = updated_at
    payload: dict[str, Any] = {
        "action": action,
        "issue": issue,
        "repository": {
            "full_name": repo,
            "name": repo.partition("/")[2],
            "owner": {"login": repo.partition("/")[0]},
        },
        "sender": sender or USER,
        "installation": {"id": INSTALLATION},
    }
    if action == "edited":
        payload["changes"] = {"body": {"from": "before"}}
    return payload


def comment_payload(
    action: str,
    body: str,
    *,
    comment_id: int | None = None,
    issue_body: str = "",
    number: int = 7,
    repo: str = REPO,
    author: dict[str, Any] | None = None,
    pull_request: bool = False,
    updated_at: str | None = None,
) -> dict[str, Any]:
    issue: dict[str, Any] = {"number": number, "title": "It crashes", "body": issue_body, "user": USER}
    if pull_request:
        issue["pull_request"] = {"url": f"https://api.github.com/repos/{repo}/pulls/{number}"}
    comment: dict[str, Any] = {"id": comment_id or 500_000 + next(_ids), "body": body, "user": author or USER}
    if updated_at is not None:
        comment["updated_at"] = updated_at
    return {
        "action": action,
        "issue": issue,
        "comment": comment,
        "repository": {"full_name": repo},
        "sender": author or USER,
        "installation": {"id": INSTALLATION},
    }


def signature(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class Harness:
    fake: FakeGitHub
    service: Service
    base_url: str
    http: aiohttp.ClientSession

    async def deliver(
        self,
        event: str,
        payload: dict[str, Any] | bytes,
        *,
        delivery: str | None = None,
        secret: str = SECRET,
        sign: bool = True,
    ) -> tuple[int, dict[str, Any]]:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "User-Agent": "GitHub-Hookshot/abc123",
        }
        if sign:
            headers["X-Hub-Signature-256"] = signature(raw, secret)
        async with self.http.post(f"{self.base_url}/github/events", data=raw, headers=headers) as response:
            is_json = response.content_type == "application/json"
            return response.status, (await response.json()) if is_json else {}

    async def settle(self) -> None:
        """Every delivery acknowledged so far has been answered."""
        state = self.service.states["github"]
        worker = state.outbox
        for _ in range(500):
            if not state.pending and not worker.busy and not await worker.outbox.pending():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("replies still running")

    def comments(self) -> list[dict[str, Any]]:
        return list(self.fake.comments.values())


def service_settings(**overrides: Any) -> ServiceSettings:
    values: dict[str, Any] = {
        "panicbot_http_host": "127.0.0.1",
        "panicbot_http_port": 0,
        "panicbot_catalog_watch_seconds": 0,
        "panicbot_shutdown_grace_seconds": 2,
        "panicbot_shutdown_drain_seconds": 0,  # no load balancer to wait for (ignored where not a setting)
        "panicbot_catalog": str(SEEDS),
        "database_url": f"sqlite:///{tempfile.mkdtemp(prefix='panicbot-test-')}/panicbot.db",
    }
    values.update(overrides)
    return ServiceSettings(**values)


@pytest.fixture
def github_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No inherited settings or proxies; no second's spacing between comments (one test restores it)."""
    monkeypatch.setattr(github_api, "MUTATION_SPACING_SECONDS", 0.0)
    return isolate(monkeypatch, *GITHUB_VARIABLES, "PANICBOT_CATALOG", "SLACK_BOT_TOKEN", "DISCORD_TOKEN")


@pytest.fixture(autouse=True)
def _no_secrets_in_logs(caplog: pytest.LogCaptureFixture) -> Any:
    caplog.set_level(logging.DEBUG)
    yield
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for secret in (SECRET, STATIC_TOKEN, "ghs_fake", "PRIVATE KEY", KEY_PEM.splitlines()[1]):
        assert secret not in logged, "a secret was logged"
    assert AVG_POOL_TITLE not in logged and DEFORM_TITLE not in logged, "a paste was logged"


@contextlib.asynccontextmanager
async def serving(
    env: pytest.MonkeyPatch,
    *,
    app: bool = True,
    fake: FakeGitHub | None = None,
    api_url: str | None = None,
    **overrides: Any,
) -> AsyncIterator[Harness]:
    """Fake GitHub, then `panicbot serve github` on a free local port, then a client. `api_url`: the bot
    talks to that address instead of the fake's."""
    async with contextlib.AsyncExitStack() as stack:
        if fake is None:
            fake = FakeGitHub(public_key=KEY.public_key(), static_token=STATIC_TOKEN)
            await stack.enter_async_context(fake)
        env.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
        env.setenv("GITHUB_API_URL", api_url or fake.api_url)
        env.setenv("GITHUB_AUTO_REPLY_REPOS", f"{REPO},other/repo")
        if app:
            env.setenv("GITHUB_APP_ID", str(APP_ID))
            env.setenv("GITHUB_PRIVATE_KEY", KEY_PEM.replace("\n", "\\n"))  # as a one-line .env holds it
        else:
            env.setenv("GITHUB_TOKEN", STATIC_TOKEN)
        service = Service(service_settings(**overrides), ["github"])
        task = asyncio.create_task(service.run())
        await asyncio.wait_for(service.started.wait(), timeout=10)
        host, port = service.bound[:2]
        try:
            async with aiohttp.ClientSession() as http:
                yield Harness(fake, service, f"http://{host}:{port}", http)
        finally:
            service.stop()
            await asyncio.wait_for(task, timeout=10)
        assert fake.problems == [], "GitHub would have refused these requests"


def run(coroutine: Any) -> None:
    asyncio.run(asyncio.wait_for(coroutine, timeout=30))


# -- acceptance ------------------------------------------------------------------------------------------


def test_serve_github_answers_a_signed_issue_with_a_panic_by_one_comment(
    github_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            status, answer = await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE))
            assert (status, answer) == (202, {"ok": True})  # acknowledged at once, answered after
            [comment] = await bot.fake.wait_for(bot.comments, what="the card comment")
            await bot.settle()
            assert len(bot.comments()) == 1
            assert comment["issue"] == 7 and comment["repo"] == REPO
            body = comment["body"]
            assert AVG_POOL_TITLE.replace(".", "\\.") in body
            assert "```rust" in body and "**Solutions:**" in body
            assert "https://github.com/tracel-ai/burn/blob/" in body  # the source at the release
            marker = read_marker(body)
            assert marker is not None and (marker.record_id, marker.source) == (AVG_POOL_ID, "issue")
            # As a GitHub App: one installation token bought with the app's JWT, then used.
            [token_call] = bot.fake.token_requests()
            assert token_call.path == f"/app/installations/{INSTALLATION}/access_tokens"
            [post] = bot.fake.made("POST", "/comments")
            assert post.headers["Authorization"].startswith("Bearer ghs_fake77")
            assert post.headers["X-GitHub-Api-Version"] == "2022-11-28"
            async with bot.http.get(f"{bot.base_url}/readyz") as response:
                assert response.status == 200 and (await response.json())["github"] is True
            async with bot.http.get(f"{bot.base_url}/metrics") as response:
                metrics = await response.text()
            assert 'panicbot_lookups_total{platform="github",status="matched"} 1.0' in metrics

    run(scenario())


def test_editing_the_issue_edits_the_comment_and_removing_the_panic_deletes_it(
    github_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE))
            [comment] = await bot.fake.wait_for(bot.comments, what="the card comment")
            await bot.settle()

            await bot.deliver("issues", issue_payload("edited", f"Sorry, wrong paste:\n{DEFORM_PASTE}"))
            await bot.fake.wait_for(lambda: bot.fake.made("PATCH"), what="the edit")
            await bot.settle()
            [edited] = bot.comments()
            assert edited["id"] == comment["id"]  # in place, not a second comment
            assert DEFORM_TITLE.replace(".", "\\.") in edited["body"]
            assert read_marker(edited["body"]).record_id == DEFORM_ID  # type: ignore[union-attr]

            # An edit that changes nothing of the text (the title only) touches nothing.
            title_only = issue_payload("edited", f"Sorry, wrong paste:\n{DEFORM_PASTE}")
            await bot.deliver("issues", title_only)
            await bot.settle()
            assert len(bot.fake.made("PATCH")) == 1

            await bot.deliver("issues", issue_payload("edited", "Never mind, it was my code."))
            await bot.fake.wait_for(lambda: bot.fake.made("DELETE"), what="the deletion")
            await bot.settle()
            assert bot.comments() == []

            # The panic pasted back in: a card again.
            await bot.deliver("issues", issue_payload("edited", AVG_POOL_PASTE))
            await bot.fake.wait_for(bot.comments, what="a new card")

    run(scenario())


def test_a_bad_signature_is_refused_with_401_and_nothing_is_parsed(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            payload = issue_payload("opened", AVG_POOL_PASTE)
            assert (await bot.deliver("issues", payload, secret="another-secret"))[0] == 401
            assert (await bot.deliver("issues", payload, sign=False))[0] == 401
            # Not JSON at all, badly signed: refused for the signature, never read (a 400 would mean parsed).
            assert (await bot.deliver("issues", b"{not json", secret="another-secret"))[0] == 401
            # Signed with the right secret over other bytes than those sent.
            raw = json.dumps(payload).encode()
            headers = {
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": signature(raw + b" "),
            }
            async with bot.http.post(f"{bot.base_url}/github/events", data=raw, headers=headers) as response:
                assert response.status == 401
            # Signed but not JSON: a 400, still nothing sent.
            assert (await bot.deliver("issues", b"{not json"))[0] == 400
            await bot.settle()
            assert [c for c in bot.fake.calls if c.path != "/app"] == []  # the app's start-up check only

    run(scenario())


def test_a_redelivery_is_acknowledged_and_not_answered_again(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            payload = issue_payload("opened", AVG_POOL_PASTE)
            delivery = str(uuid.uuid4())
            assert (await bot.deliver("issues", payload, delivery=delivery))[0] == 202
            await bot.fake.wait_for(bot.comments, what="the card comment")
            status, answer = await bot.deliver("issues", payload, delivery=delivery)
            assert (status, answer) == (200, {"ok": True, "duplicate": True})
            await bot.settle()
            assert len(bot.comments()) == 1

    run(scenario())


def test_a_replayed_or_late_delivery_older_than_what_was_handled_changes_nothing(
    github_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            opened = issue_payload("opened", AVG_POOL_PASTE, updated_at="2026-12-01T10:00:00Z")
            await bot.deliver("issues", opened)
            [card] = await bot.fake.wait_for(bot.comments, what="the card")
            await bot.settle()
            edited = issue_payload("edited", DEFORM_PASTE, updated_at="2026-12-01T10:05:00Z")
            await bot.deliver("issues", edited)
            await bot.fake.wait_for(lambda: bot.fake.made("PATCH"), what="the edit")
            await bot.settle()

            # The `opened` body again (a redelivery, a captured body under a new delivery id), and an older
            # edit arriving late: neither posts, edits nor deletes anything.
            await bot.deliver("issues", opened)
            late = issue_payload("edited", "nothing here any more", updated_at="2026-12-01T10:01:00Z")
            await bot.deliver("issues", late)
            await bot.deliver("issues", edited)  # the newest, replayed: nothing either
            await bot.settle()
            [shown] = bot.comments()
            assert shown["id"] == card["id"] and read_marker(shown["body"]).record_id == DEFORM_ID  # type: ignore[union-attr]
            assert len(bot.fake.made("PATCH")) == 1 and not bot.fake.made("DELETE")

            # A mention replayed under a new delivery id is answered once.
            ask = comment_payload(
                "created", f"@panicbot\n{AVG_POOL_PASTE}", number=8, updated_at="2026-12-01T11:00:00Z"
            )
            await bot.deliver("issue_comment", ask)
            await bot.deliver("issue_comment", ask)
            await bot.settle()
            assert len(bot.comments()) == 2

            # A newer edit still goes through.
            newer = issue_payload("edited", AVG_POOL_PASTE, updated_at="2026-12-01T10:06:00Z")
            await bot.deliver("issues", newer)
            await bot.fake.wait_for(lambda: len(bot.fake.made("PATCH")) == 2, what="the newer edit")

    run(scenario())


@pytest.mark.parametrize("body", [f"@panicbot\n{AVG_POOL_PASTE}", "@panicbot"], ids=["card", "usage"])
def test_a_delivery_resumed_after_its_replica_died_mid_answer_is_not_answered_twice(
    github_env: pytest.MonkeyPatch, body: str
) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            ask = comment_payload("created", body, number=11)
            await bot.deliver("issue_comment", ask)
            [answer] = await bot.fake.wait_for(bot.comments, what="the answer")
            await bot.settle()
            assert read_marker(answer["body"]).source == f"c{ask['comment']['id']}"  # type: ignore[union-attr]
            # The same delivery, as a replica that died after posting leaves it: held once, lease run out.
            outbox = bot.service.states["github"].outbox.outbox
            job = delivery_job("issue_comment", ask)
            assert job is not None
            outbox.add_now(OutboxEntry("died-mid-answer", REPO, "ferris", job))
            assert outbox.claim_now("dead-replica", 0).key == "died-mid-answer"
            await bot.fake.wait_for(lambda: not outbox.pending_now(), what="the resumed delivery")
            await bot.settle()
            assert len(bot.comments()) == 1

    run(scenario())


def test_a_mention_in_a_comment_is_answered_with_the_card_of_the_issue(
    github_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            # A repository without auto-reply: pastes are left alone, a mention is always answered.
            await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE, repo=ELSEWHERE))
            ask = comment_payload(
                "created", "@panicbot what does this mean?", issue_body=AVG_POOL_PASTE, repo=ELSEWHERE
            )
            assert (await bot.deliver("issue_comment", ask))[0] == 202
            [answer] = await bot.fake.wait_for(bot.comments, what="the answer to the mention")
            await bot.settle()
            assert answer["repo"] == ELSEWHERE and len(bot.comments()) == 1
            assert read_marker(answer["body"]).record_id == AVG_POOL_ID  # type: ignore[union-attr]

            # A comment that quotes (or holds) a panic of its own: the card for that one.
            quoted = "\n".join(f"> {line}" for line in DEFORM_PASTE.splitlines())
            reply = comment_payload("created", f"{quoted}\n\n@panicbot and this?", issue_body=AVG_POOL_PASTE)
            await bot.deliver("issue_comment", reply)
            await bot.fake.wait_for(lambda: len(bot.comments()) == 2, what="the second answer")
            assert read_marker(bot.comments()[1]["body"]).record_id == DEFORM_ID  # type: ignore[union-attr]

            # Nothing to explain: how to ask (`@panicbot` in code: the reply pings nobody), not silence.
            await bot.deliver("issue_comment", comment_payload("created", "@panicbot"))
            await bot.fake.wait_for(lambda: len(bot.comments()) == 3, what="the usage answer")
            assert "Mention `@panicbot`" in bot.comments()[2]["body"]

    run(scenario())


def test_no_unasked_card_on_pull_requests_other_repositories_or_bots(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            await bot.deliver("issue_comment", comment_payload("created", AVG_POOL_PASTE, pull_request=True))
            await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE, repo=ELSEWHERE))
            other_bot = {"login": "dependabot[bot]", "id": 49699333, "type": "Bot"}
            await bot.deliver("issue_comment", comment_payload("created", AVG_POOL_PASTE, author=other_bot))
            own = {"login": BOT_LOGIN, "id": 1, "type": "Bot"}
            await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE, number=8, sender=own))
            await bot.settle()
            assert bot.comments() == []
            # On a pull request a mention is still answered.
            ask = comment_payload("created", f"@panicbot\n{AVG_POOL_PASTE}", pull_request=True, number=9)
            await bot.deliver("issue_comment", ask)
            [answer] = await bot.fake.wait_for(bot.comments, what="the answer on the pull request")
            assert answer["issue"] == 9

    run(scenario())


def test_pull_requests_get_unasked_cards_when_configured(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        github_env.setenv("GITHUB_AUTO_REPLY_PULL_REQUESTS", "true")
        async with serving(github_env) as bot:
            await bot.deliver("issue_comment", comment_payload("created", AVG_POOL_PASTE, pull_request=True))
            [card] = await bot.fake.wait_for(bot.comments, what="the card on the pull request")
            assert read_marker(card["body"]).source.startswith("c")  # type: ignore[union-attr]

    run(scenario())


def test_a_comment_paste_follows_its_edits_and_deletion(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            pasted = comment_payload("created", AVG_POOL_PASTE)
            await bot.deliver("issue_comment", pasted)
            [card] = await bot.fake.wait_for(bot.comments, what="the card")
            await bot.settle()
            # Our own comment comes back as an event: ignored.
            own = {"login": BOT_LOGIN, "id": 1, "type": "Bot"}
            echo = comment_payload("created", card["body"], comment_id=card["id"], author=own)
            await bot.deliver("issue_comment", echo)
            edited = comment_payload("edited", DEFORM_PASTE, comment_id=pasted["comment"]["id"])
            await bot.deliver("issue_comment", edited)
            await bot.fake.wait_for(lambda: bot.fake.made("PATCH"), what="the edit")
            deleted = comment_payload("deleted", DEFORM_PASTE, comment_id=pasted["comment"]["id"])
            await bot.deliver("issue_comment", deleted)
            await bot.fake.wait_for(lambda: bot.fake.made("DELETE"), what="the deletion")
            await bot.settle()
            assert bot.comments() == []

    run(scenario())


def test_reactions_on_the_card_are_read_back_as_votes(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE))
            [card] = await bot.fake.wait_for(bot.comments, what="the card")
            await bot.settle()
            bot.fake.react(card["id"], "+1", login="ferris", user_id=501)
            bot.fake.react(card["id"], "-1", login="crab", user_id=502)
            bot.fake.react(card["id"], "heart", login="crab", user_id=502)
            bot.fake.react(card["id"], "+1", login="some-bot[bot]", user_id=9, bot=True)
            # The next event on the issue reads them (GitHub sends no event for a reaction).
            for _ in range(2):  # read twice: counted once
                await bot.deliver("issue_comment", comment_payload("created", "Thanks!"))
                await bot.settle()
            place = f"{REPO}#c{card['id']}"
            tally = bot.service.store.tally(record_id=AVG_POOL_ID, platform="github", place=place)
            assert tally == {"up": 1, "down": 1}
            async with bot.http.get(f"{bot.base_url}/metrics") as response:
                metrics = await response.text()
            assert 'panicbot_feedback_votes_total{platform="github",vote="up"} 1.0' in metrics

    run(scenario())


def test_secondary_rate_limit_waits_for_retry_after_then_posts_once(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with FakeGitHub(public_key=KEY.public_key()) as fake:
            fake.rate_limit("POST", "/comments", retry_after=1)
            async with serving(github_env, fake=fake) as bot:
                await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE))
                await bot.fake.wait_for(bot.comments, what="the card after the wait")
                await bot.settle()
                limited, posted = [c for c in fake.calls if c.method == "POST" and "/comments" in c.path]
                assert (limited.status, posted.status) == (403, 201)
                assert posted.at - limited.at >= 0.9  # Retry-After honoured, not retried at once
                assert len(bot.comments()) == 1

    run(scenario())


def test_a_mention_github_fails_to_take_is_answered_later_from_the_outbox(
    github_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    github_env.setattr(outbox_module, "RETRY_BASE_SECONDS", 0.05)

    async def scenario() -> None:
        async with FakeGitHub(public_key=KEY.public_key()) as fake:
            fake.rate_limit("POST", "/comments", retry_after=None, times=2, status=502)  # GitHub's own error
            async with serving(github_env, fake=fake) as bot:
                delivery = str(uuid.uuid4())
                ask = comment_payload("created", f"@panicbot\n{AVG_POOL_PASTE}", number=12)
                await bot.deliver("issue_comment", ask, delivery=delivery)
                [answer] = await fake.wait_for(bot.comments, what="the answer after two failures")
                await bot.settle()
                failed = [c for c in fake.calls if c.method == "POST" and c.status == 502]
                assert len(failed) == 2 and len(bot.comments()) == 1  # before: lost at the first 502
                assert read_marker(answer["body"]).source == f"c{ask['comment']['id']}"  # type: ignore[union-attr]

    run(scenario())
    assert any("not answered now" in r.getMessage() for r in caplog.records)


def test_the_installation_token_is_cached_across_deliveries(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            for number in (1, 2, 3):
                await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE, number=number))
            await bot.fake.wait_for(lambda: len(bot.comments()) == 3, what="three cards")
            assert len(bot.fake.token_requests()) == 1

    run(scenario())


def test_a_token_for_a_single_repository_works_without_an_app(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with serving(github_env, app=False) as bot:
            payload = issue_payload("opened", AVG_POOL_PASTE)
            del payload["installation"]  # a repository webhook names no installation
            await bot.deliver("issues", payload)
            await bot.fake.wait_for(bot.comments, what="the card")
            [post] = bot.fake.made("POST", "/comments")
            assert post.headers["Authorization"] == f"Bearer {STATIC_TOKEN}"
            assert bot.fake.token_requests() == []

    run(scenario())


def test_after_a_restart_the_card_is_found_again_by_its_marker(github_env: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with FakeGitHub(public_key=KEY.public_key()) as fake:
            async with serving(github_env, fake=fake) as bot:
                await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE))
                [card] = await fake.wait_for(bot.comments, what="the card")
            async with serving(github_env, fake=fake) as restarted:  # no Redis: nothing remembered
                await restarted.deliver("issues", issue_payload("edited", DEFORM_PASTE))
                await fake.wait_for(lambda: fake.made("PATCH"), what="the edit of the old card")
                await restarted.settle()
                [edited] = restarted.comments()
                assert edited["id"] == card["id"]

    run(scenario())


def test_replicas_share_dedupe_and_cards_through_redis(github_env: pytest.MonkeyPatch) -> None:
    redis_url = "redis://127.0.0.1:6379/0"
    try:
        import redis

        redis.Redis.from_url(redis_url, socket_timeout=0.5).ping()
    except Exception:
        pytest.skip("no Redis on 127.0.0.1:6379")

    async def scenario() -> None:
        async with FakeGitHub(public_key=KEY.public_key()) as fake:
            number = 100_000 + uuid.uuid4().int % 1_000_000  # keys of earlier runs never meet this one
            async with (
                serving(github_env, fake=fake, redis_url=redis_url) as one,
                serving(github_env, fake=fake, redis_url=redis_url) as two,
            ):
                delivery = str(uuid.uuid4())
                payload = issue_payload("opened", AVG_POOL_PASTE, number=number)
                assert (await one.deliver("issues", payload, delivery=delivery))[0] == 202
                await fake.wait_for(one.comments, what="the card")
                await one.settle()
                assert (await two.deliver("issues", payload, delivery=delivery))[0] == 200
                # The edit reaches the other replica: it edits the same card, found in Redis.
                await two.deliver("issues", issue_payload("edited", DEFORM_PASTE, number=number))
                await fake.wait_for(lambda: fake.made("PATCH"), what="the edit")
                await two.settle()
                assert len(fake.comments) == 1
                assert not [c for c in fake.calls if c.method == "GET" and "/comments?" in c.path]

    run(scenario())


def test_a_megabyte_issue_is_answered_and_an_oversized_delivery_refused(
    github_env: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serving(github_env) as bot:
            log_lines = "".join(
                f"[2024-01-01T00:00:{n % 60:02d}Z INFO  train] step {n} loss 0.5\n" for n in range(20_000)
            )
            body = f"{log_lines}{AVG_POOL_PASTE}\n"
            assert len(body) > 1_000_000
            assert (await bot.deliver("issues", issue_payload("opened", body)))[0] == 202
            [card] = await bot.fake.wait_for(bot.comments, what="the card for a long issue")
            assert read_marker(card["body"]).record_id == AVG_POOL_ID  # type: ignore[union-attr]
            huge = issue_payload("opened", "x" * (9 * 1024 * 1024), number=8)
            assert (await bot.deliver("issues", huge))[0] == 413
            await bot.settle()
            assert len(bot.comments()) == 1

    run(scenario())


# -- start-up and GitHub out of reach -----------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_github_unreachable_is_logged_as_unreachable_not_as_a_refusal(
    github_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"

    def unreachable_lines() -> list[str]:
        return [m for r in caplog.records if "GitHub unreachable at" in (m := r.getMessage())]

    async def scenario() -> None:
        async with serving(github_env, api_url=url) as bot:
            assert (await bot.deliver("issues", issue_payload("opened", AVG_POOL_PASTE)))[0] == 202
            await bot.fake.wait_for(
                lambda: [m for m in unreachable_lines() if "access_tokens" in m], what="the log line"
            )
            await bot.settle()
            async with bot.http.get(f"{bot.base_url}/metrics") as response:
                metrics = await response.text()
            assert 'panicbot_platform_api_errors_total{error="unreachable",platform="github"} 1.0' in metrics

    run(scenario())
    [line] = [m for m in unreachable_lines() if "access_tokens" in m]
    assert line.startswith(f"GitHub unreachable at {url} (")  # before: "GitHub refused access_tokens (0)"
    assert not [r for r in caplog.records if "GitHub refused" in r.getMessage()]


@pytest.mark.parametrize(
    ("app_id", "key", "variables"),
    [
        (APP_ID + 1, KEY, ("GITHUB_APP_ID",)),  # a mistyped App ID
        (APP_ID, new_private_key(), ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY")),  # another app's key
    ],
    ids=["app-id", "key"],
)
def test_refused_app_credentials_end_start_up_with_one_line_naming_the_variable(
    github_env: pytest.MonkeyPatch, app_id: int, key: Any, variables: tuple[str, ...]
) -> None:
    async def scenario() -> None:
        async with FakeGitHub(public_key=KEY.public_key()) as fake:
            github_env.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
            github_env.setenv("GITHUB_API_URL", fake.api_url)
            github_env.setenv("GITHUB_APP_ID", str(app_id))
            github_env.setenv("GITHUB_PRIVATE_KEY", pem(key))
            service = Service(service_settings(), ["github"])
            await asyncio.wait_for(service.run(), timeout=10)  # before: ready, and served until stopped
            assert isinstance(service.failure_error, PlatformRefused)
            failure = service.failure or ""
            assert all(variable in failure for variable in variables), failure
            assert "401" in failure and "\n" not in failure
            assert SECRET not in failure and "PRIVATE KEY" not in failure
            [check] = fake.app_checks()
            assert check.status == 401
            assert fake.token_requests() == []

    run(scenario())
