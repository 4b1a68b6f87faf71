"""The compose file runs on any Compose v2 (no `env_file` `required`, which needs 2.24), sets its own database
and Redis, and deploy/.env.example works for one container (`docker run --env-file`), where the compose
service names `postgres` and `redis` resolve to nothing. The README says how the bot gets into a channel."""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.deploy.test_deploy_files import COMPOSE, ROOT, env_example, load_yaml

README = ROOT / "README.md"


def readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_compose_env_file_uses_the_short_form_every_compose_v2_reads() -> None:
    bot = load_yaml(COMPOSE)["services"]["bot"]
    # The long form ({path, required}) is Compose 2.24+: older releases refuse the whole file.
    assert all(isinstance(entry, str) for entry in bot["env_file"]), bot["env_file"]
    assert bot["env_file"] == [".env"]  # what `cp deploy/.env.example deploy/.env` made
    header = COMPOSE.read_text(encoding="utf-8").split("\nname:", 1)[0]
    assert "Compose v2" in header


def test_compose_sets_its_own_database_and_redis() -> None:
    services = load_yaml(COMPOSE)["services"]
    environment = services["bot"]["environment"]
    postgres = services["postgres"]["environment"]
    user, password, db = postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"], postgres["POSTGRES_DB"]
    assert environment["DATABASE_URL"] == f"postgresql+psycopg://{user}:{password}@postgres:5432/{db}"
    assert urlsplit(environment["REDIS_URL"]).hostname == "redis"


def test_env_example_works_for_a_single_container() -> None:
    services = set(load_yaml(COMPOSE)["services"])
    for name, value, active in env_example():
        if active and "://" in value:
            host = urlsplit(value).hostname
            assert host not in services, f"{name}={value}: '{host}' exists only inside the compose stack"
    commented = {name for name, _, active in env_example() if not active}
    assert {"DATABASE_URL", "REDIS_URL"} <= commented  # still listed and explained, for docker run


def test_readme_says_how_to_invite_the_bot_to_a_channel() -> None:
    deploying = readme_section("Deploying")
    assert "/invite @panicbot" in deploying
    assert "Discord" in deploying and "channel permissions" in deploying
    assert "Compose v2" in deploying
