"""The deployment files agree with the code: the variables the settings classes read, the port and paths the
service serves, the commands the CLI accepts, and with each other (compose, Dockerfile, Kubernetes base).

Nothing here builds an image or talks to a cluster: the files are parsed and cross-checked."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from pydantic_settings import BaseSettings

from adapters.cli.main import build_parser
from adapters.serve.main import ServiceSettings, build_service_application
from adapters.slack.settings import SlackSettings
from bot.records import load_catalog

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "dockerignore.txt"
COMPOSE = DEPLOY / "docker-compose.yml"
ENV_EXAMPLE = DEPLOY / ".env.example"
BASE = DEPLOY / "k8s" / "base"
SECRET_EXAMPLE = DEPLOY / "k8s" / "secret.example.yaml"

# Read by the storage and shared-state code, not by a settings class.
EXTRA_VARIABLES = {"DATABASE_URL", "REDIS_URL"}
SECRET_NAME = "panicbot"
ENV_LINE = re.compile(r"^(?P<comment>#\s*)?(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)$")


# -- helpers ---------------------------------------------------------------------------------------------


def settings_classes() -> list[type[BaseSettings]]:
    classes: list[type[BaseSettings]] = [ServiceSettings, SlackSettings]
    try:
        from adapters.discord.settings import DiscordSettings
    except ImportError:  # the Discord adapter is optional for these checks
        return classes
    from adapters.github.settings import GitHubSettings

    return [*classes, DiscordSettings, GitHubSettings]


def variable_names(cls: type[BaseSettings]) -> set[str]:
    prefix = str(cls.model_config.get("env_prefix", ""))
    names = set()
    for name, info in cls.model_fields.items():
        alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
        names.add((alias or prefix + name).upper())
    return names


def settings_variables() -> set[str]:
    return set().union(*(variable_names(cls) for cls in settings_classes()))


def env_example() -> list[tuple[str, str, bool]]:
    """(name, value, active) for every `NAME=value` line, commented out (`# NAME=value`) or not."""
    entries = []
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = ENV_LINE.match(line.strip())
        if match:
            entries.append((match["name"], match["value"], match["comment"] is None))
    return entries


def yaml_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in {".yml", ".yaml"} and p.is_file())


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def kustomization() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(BASE / "kustomization.yaml")
    return data


def base_documents() -> list[dict[str, Any]]:
    docs = []
    for name in kustomization()["resources"]:
        docs.extend(d for d in yaml.safe_load_all((BASE / name).read_text(encoding="utf-8")) if d)
    return docs


def documents(kind: str) -> list[dict[str, Any]]:
    return [d for d in base_documents() if d["kind"] == kind]


def workload(kind: str) -> dict[str, Any]:
    [doc] = documents(kind)
    return doc


def workloads() -> list[dict[str, Any]]:
    return [workload("Deployment"), workload("StatefulSet")]


def only_container(doc: dict[str, Any]) -> dict[str, Any]:
    [container] = doc["spec"]["template"]["spec"]["containers"]
    return container


def plain_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if not pending and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        logical.append(pending + raw)
        pending = ""
    assert not pending, "the Dockerfile ends in a continuation line"
    result = []
    for line in logical:
        keyword, _, rest = line.strip().partition(" ")
        result.append((keyword.upper(), rest.strip()))
    return result


def dockerfile(keyword: str) -> list[str]:
    return [rest for kw, rest in dockerfile_instructions() if kw == keyword]


def exposed_port() -> int:
    [port] = dockerfile("EXPOSE")
    return int(port.split("/")[0])


def service_routes() -> set[str]:
    # The routes do not depend on the status or metrics objects, which only the handlers use.
    app = build_service_application(SimpleNamespace(), SimpleNamespace())  # type: ignore[arg-type]
    return {route.resource.canonical for route in app.router.routes() if route.resource is not None}


def url_path(text: str) -> str:
    match = re.search(r"http://127\.0\.0\.1:[^/]+(/[A-Za-z0-9_/-]*)", text)
    assert match, f"no local URL in {text!r}"
    return match.group(1)


def resolve_port(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    [number] = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    return int(number)


def secret_refs(doc: Any) -> Iterator[dict[str, Any]]:
    if isinstance(doc, dict):
        if "secretKeyRef" in doc:
            yield doc["secretKeyRef"]
        for value in doc.values():
            yield from secret_refs(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from secret_refs(value)


# -- every file parses -------------------------------------------------------------------------------------


def test_every_yaml_file_parses() -> None:
    files = yaml_files()
    assert {COMPOSE, BASE / "kustomization.yaml", SECRET_EXAMPLE} <= set(files)
    for path in files:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
        assert docs, f"{path} is empty"
        assert all(isinstance(d, dict) for d in docs), path


def test_every_deploy_file_keeps_lines_short() -> None:
    for path in DEPLOY.rglob("*"):
        if path.is_file() and path.suffix != ".jsonl":
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                assert len(line) <= 110, f"{path.relative_to(ROOT)}:{number} is {len(line)} characters"


# -- .env.example and the settings classes ---------------------------------------------------------------


def test_env_example_lists_every_setting_and_nothing_else() -> None:
    names = [name for name, _, _ in env_example()]
    assert len(names) == len(set(names)), "a variable is listed twice in .env.example"
    known = settings_variables() | EXTRA_VARIABLES
    assert set(names) - known == set(), "read by no settings class"
    assert settings_variables() - set(names) == set(), "missing from .env.example"
    assert set(names) >= EXTRA_VARIABLES


def test_discord_settings_are_checked_when_the_adapter_is_there() -> None:
    from adapters.discord.settings import DiscordSettings

    assert DiscordSettings in settings_classes()
    assert {"DISCORD_TOKEN", "DISCORD_SHARD_COUNT", "DISCORD_SHARD_IDS"} <= variable_names(DiscordSettings)


def test_env_example_values_are_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every example value, commented out or not, is one the settings classes accept."""
    for name in settings_variables():
        monkeypatch.delenv(name, raising=False)
    for name, value, _ in env_example():
        monkeypatch.setenv(name, value)
    for cls in settings_classes():
        cls()  # raises ValidationError on a bad example


def test_env_example_holds_no_secret_and_no_active_token() -> None:
    active = {name: value for name, value, is_active in env_example() if is_active}
    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "SLACK_SIGNING_SECRET",
        "DISCORD_TOKEN",
        "GITHUB_WEBHOOK_SECRET",
        "GITHUB_PRIVATE_KEY",
        "GITHUB_TOKEN",
    ):
        assert name not in active, f"{name} must stay commented out in the example"
    for name, value, _ in env_example():
        if name.endswith(("_TOKEN", "_SECRET")):
            assert "your" in value, f"{name} must hold a placeholder"
    # Optional settings left empty would be read as "" (an invalid token), so they are commented out instead.
    assert all(value for value in active.values())


def test_env_example_matches_the_compose_services() -> None:
    values = {name: value for name, value, _ in env_example()}
    # The database and Redis URLs are compose's own (tests/deploy/test_compose_and_env.py).
    assert values["DATABASE_URL"].startswith("postgresql+psycopg://")
    assert values["REDIS_URL"].startswith("redis://")
    assert int(values["PANICBOT_HTTP_PORT"]) == exposed_port()


# -- Dockerfile --------------------------------------------------------------------------------------------


def test_dockerfile_builds_with_uv_into_a_slim_non_root_runtime() -> None:
    froms = dockerfile("FROM")
    assert len(froms) >= 3, "uv, build and runtime stages"
    args = " ".join(dockerfile("ARG"))
    assert "ghcr.io/astral-sh/uv:" in args and "-slim" in args
    runs = " ".join(dockerfile("RUN"))
    assert "uv sync --locked --no-dev" in runs
    assert any("--from=uv" in c and "/uv" in c for c in dockerfile("COPY"))
    assert any(c.startswith("--from=build /app/.venv") for c in dockerfile("COPY"))
    [user] = dockerfile("USER")
    assert user.split(":")[0] not in {"0", "root"}
    env = " ".join(dockerfile("ENV"))
    assert "PANICBOT_CATALOG" not in env, "the embedded catalog is the default"
    assert "/catalog" in runs, "the mount point of a real catalog"


def test_dockerfile_runs_panicbot_serve() -> None:
    assert dockerfile("ENTRYPOINT") == ['["panicbot"]']
    assert dockerfile("CMD") == ['["serve"]']
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'panicbot = "adapters.cli.main:main"' in pyproject
    assert build_parser().parse_args(["serve"]).command == "serve"


def test_dockerfile_port_and_healthcheck_match_the_service() -> None:
    assert exposed_port() == ServiceSettings.model_fields["panicbot_http_port"].default == 8080
    [healthcheck] = dockerfile("HEALTHCHECK")
    assert "curl" not in healthcheck and "python" in healthcheck
    assert "'8080'" in healthcheck, "falls back to the exposed port"
    assert url_path(healthcheck) == "/healthz"
    assert url_path(healthcheck) in service_routes()


def test_dockerfile_copies_what_the_wheel_needs_and_the_context_keeps_it() -> None:
    sources = []
    for copy in dockerfile("COPY"):
        if copy.startswith("--from="):
            continue
        *parts, _target = shlex.split(copy)
        sources.extend(parts)
    for source in sources:
        assert (ROOT / source).exists(), source
    assert {"bot", "adapters", "pyproject.toml", "uv.lock", "README.md"} <= set(sources)
    allowed = {
        line.removeprefix("!").rstrip("/")
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.startswith("!")
    }
    assert set(sources) <= allowed, "the context would leave out a file the image needs"
    ignore_lines = [line for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert "*" in ignore_lines and "**/.env" in ignore_lines, "an allowlist that never sends deploy/.env"


# -- docker compose ----------------------------------------------------------------------------------------


def test_compose_has_bot_redis_and_postgres_with_healthchecks() -> None:
    services = load_yaml(COMPOSE)["services"]
    assert {"bot", "redis", "postgres"} <= set(services)
    for name in ("bot", "redis", "postgres"):
        test = services[name]["healthcheck"]["test"]
        assert test and test[0] in {"CMD", "CMD-SHELL"}, name
    for dependency in ("redis", "postgres"):
        assert services["bot"]["depends_on"][dependency]["condition"] == "service_healthy"


def test_compose_builds_the_dockerfile_and_mounts_the_catalog() -> None:
    bot = load_yaml(COMPOSE)["services"]["bot"]
    assert bot["build"]["context"] == ".."
    assert (COMPOSE.parent / bot["build"]["context"] / bot["build"]["dockerfile"]).resolve() == DOCKERFILE
    env_files = [entry["path"] if isinstance(entry, dict) else entry for entry in bot["env_file"]]
    assert ".env" in env_files
    assert any(volume.split(":")[1] == "/catalog" for volume in bot["volumes"])
    assert (COMPOSE.parent / bot["volumes"][0].split(":")[0]).is_dir()
    assert f"{exposed_port()}:{exposed_port()}" in bot["ports"]
    [check] = [part for part in bot["healthcheck"]["test"] if "urlopen" in part]
    assert url_path(check) in service_routes()
    assert f":{exposed_port()}/" in check
    assert build_parser().parse_args(bot["command"]).command == "serve"


# -- Kubernetes --------------------------------------------------------------------------------------------


def test_kustomization_lists_exactly_the_files_in_base() -> None:
    data = kustomization()
    listed = set(data["resources"])
    for generator in data.get("configMapGenerator", []):
        listed |= set(generator.get("files", []))
    on_disk = {p.name for p in BASE.iterdir() if p.is_file()} - {"kustomization.yaml"}
    assert listed == on_disk
    assert len(data["resources"]) == len(set(data["resources"]))
    assert not (BASE / SECRET_EXAMPLE.name).exists(), "the example secret stays outside the base"


def test_probes_use_the_exposed_port_and_the_service_paths() -> None:
    routes = service_routes()
    for doc in workloads():
        container = only_container(doc)
        liveness, readiness = container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"]
        assert liveness["path"] == "/healthz" and readiness["path"] == "/readyz"
        assert {liveness["path"], readiness["path"]} <= routes
        for probe in (liveness, readiness):
            assert resolve_port(container, probe["port"]) == exposed_port()
        assert int(plain_env(container).get("PANICBOT_HTTP_PORT", exposed_port())) == exposed_port()


def test_k8s_env_names_are_settings() -> None:
    known = settings_variables() | EXTRA_VARIABLES
    for doc in workloads():
        container = only_container(doc)
        names = {entry["name"] for entry in container["env"]}
        script = " ".join(container.get("args", []))
        names |= set(re.findall(r"export ([A-Z][A-Z0-9_]*)=", script))
        assert names - known == set(), doc["metadata"]["name"]


def test_secrets_come_by_reference_from_the_example_secret() -> None:
    secret = load_yaml(SECRET_EXAMPLE)
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == SECRET_NAME
    for key, value in secret["stringData"].items():
        if key.endswith(("token", "secret")) or key == "database-url":
            assert "replace-me" in value, f"{key} must be a placeholder"
    refs = [ref for doc in base_documents() for ref in secret_refs(doc)]
    assert refs
    assert {ref["name"] for ref in refs} == {SECRET_NAME}
    assert {ref["key"] for ref in refs} <= set(secret["stringData"])
    assert all(d["kind"] != "Secret" for d in base_documents()), "no Secret with values in the base"
    deployment_env = {e["name"] for e in only_container(workload("Deployment"))["env"] if "valueFrom" in e}
    assert {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"} <= deployment_env


def test_slack_deployment_serves_http_with_hpa_service_and_pdb() -> None:
    deployment = workload("Deployment")
    container = only_container(deployment)
    args = build_parser().parse_args(container["args"])
    assert (args.command, args.platform, args.http) == ("serve", "slack", True)
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    hpa = workload("HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert hpa["spec"]["minReplicas"] >= 2
    assert "replicas" not in deployment["spec"], "the HPA owns the replica count"
    services = [d for d in documents("Service") if d["spec"].get("clusterIP") != "None"]
    [service] = [s for s in services if s["spec"]["selector"].items() <= pod_labels.items()]
    for port in service["spec"]["ports"]:
        assert resolve_port(container, port["targetPort"]) == exposed_port()
    pdbs = documents("PodDisruptionBudget")
    assert any(p["spec"]["selector"]["matchLabels"].items() <= pod_labels.items() for p in pdbs)


def test_discord_statefulset_shards_by_ordinal(tmp_path: Path) -> None:
    statefulset = workload("StatefulSet")
    container = only_container(statefulset)
    replicas = statefulset["spec"]["replicas"]
    assert int(plain_env(container)["DISCORD_SHARD_COUNT"]) == replicas
    service_name = statefulset["spec"]["serviceName"]
    [headless] = [d for d in documents("Service") if d["metadata"]["name"] == service_name]
    assert headless["spec"]["clusterIP"] == "None"
    assert container["command"] == ["/bin/sh", "-c"]
    [script] = container["args"]
    # Run the real snippet with a stand-in `panicbot` that reports what it was given.
    fake = tmp_path / "panicbot"
    fake.write_text('#!/bin/sh\necho "$DISCORD_SHARD_IDS|$*"\n', encoding="utf-8")
    fake.chmod(0o755)
    name = statefulset["metadata"]["name"]
    seen = set()
    for ordinal in range(replicas):
        env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}", "HOSTNAME": f"{name}-{ordinal}"}
        done = subprocess.run(
            ["/bin/sh", "-c", script], env=env, capture_output=True, text=True, check=True, timeout=10
        )
        shard, _, argv = done.stdout.strip().partition("|")
        assert shard == str(ordinal)
        args = build_parser().parse_args(argv.split())
        assert (args.command, args.platform) == ("serve", "discord")
        seen.add(int(shard))
    assert seen == set(range(replicas))


def test_discord_shard_env_is_accepted_by_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from adapters.discord.settings import DiscordSettings

    statefulset = workload("StatefulSet")
    env = plain_env(only_container(statefulset))
    for name in variable_names(DiscordSettings):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DISCORD_TOKEN", "placeholder-token")
    for ordinal in range(statefulset["spec"]["replicas"]):
        monkeypatch.setenv("DISCORD_SHARD_IDS", str(ordinal))
        settings = DiscordSettings()  # type: ignore[call-arg]
        assert settings.discord_shard_ids == (ordinal,)
        assert settings.discord_shard_count == statefulset["spec"]["replicas"]


def test_catalog_comes_from_the_generated_configmap_at_catalog() -> None:
    [generator] = kustomization()["configMapGenerator"]
    [catalog_file] = generator["files"]
    catalog = load_catalog([BASE / catalog_file])
    assert catalog.entries and not catalog.errors
    for doc in workloads():
        pod = doc["spec"]["template"]["spec"]
        container = only_container(doc)
        [volume] = [v for v in pod["volumes"] if "configMap" in v]
        assert volume["configMap"]["name"] == generator["name"]
        [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
        assert mount["mountPath"] == "/catalog" and mount["readOnly"] is True
        # A file, not the folder: a ConfigMap mount also holds a hidden timestamped copy of every file.
        assert plain_env(container)["PANICBOT_CATALOG"] == f"/catalog/{catalog_file}"


def test_pods_are_locked_down_and_sized() -> None:
    [user] = dockerfile("USER")
    for doc in workloads():
        pod = doc["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert str(pod["securityContext"]["runAsUser"]) == user.split(":")[0]
        assert pod["automountServiceAccountToken"] is False
        container = only_container(doc)
        assert container["image"] in {image["name"] for image in kustomization()["images"]}
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])
        assert {"cpu", "memory"} <= set(container["resources"]["limits"])
        assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"]), "writable /tmp"
        grace = float(plain_env(container)["PANICBOT_SHUTDOWN_GRACE_SECONDS"])
        assert pod["terminationGracePeriodSeconds"] > grace


@pytest.mark.parametrize("version", ["1.28.0", "latest"])
def test_manifests_match_the_kubernetes_schemas(version: str) -> None:
    """Offline: kubernetes-validate ships the API schemas. Skipped where it is not installed."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    wanted = kubernetes_validate.latest_version() if version == "latest" else version
    for doc in [*base_documents(), load_yaml(SECRET_EXAMPLE)]:
        kubernetes_validate.validate(doc, wanted, strict=True)
