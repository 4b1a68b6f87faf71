"""Prometheus metrics of the running bot (served at `GET /metrics`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from bot.matcher import LookupResult

CONTENT_TYPE = CONTENT_TYPE_LATEST


def confidence_band(confidence: float) -> str:
    """Bands coarse enough to keep label cardinality tiny."""
    if confidence >= 0.9:
        return "0.9-1"
    if confidence >= 0.7:
        return "0.7-0.9"
    if confidence >= 0.5:
        return "0.5-0.7"
    return "0-0.5"


class Metrics:
    """An `Observer` that counts; its own registry so tests and several apps never collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.lookups = Counter(
            "panicbot_lookups",
            "Lookups by platform and outcome",
            ["platform", "status"],
            registry=self.registry,
        )
        self.matches = Counter(
            "panicbot_matches",
            "Answered lookups by confidence band",
            ["platform", "band"],
            registry=self.registry,
        )
        self.auto_replies = Counter(
            "panicbot_auto_replies", "Cards posted unasked", ["platform"], registry=self.registry
        )
        self.votes = Counter(
            "panicbot_feedback_votes", "Feedback votes", ["platform", "vote"], registry=self.registry
        )
        self.api_errors = Counter(
            "panicbot_platform_api_errors",
            "Chat platform API errors",
            ["platform", "error"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "panicbot_lookup_seconds",
            "Time to look up one paste",
            ["platform"],
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=self.registry,
        )
        self.catalog_records = Gauge(
            "panicbot_catalog_records", "Records in the serving catalog", registry=self.registry
        )
        self.catalog_reloads = Counter(
            "panicbot_catalog_reloads", "Catalog reloads by outcome", ["outcome"], registry=self.registry
        )
        self.catalog_info = Info("panicbot_catalog", "The serving catalog", registry=self.registry)
        self.observer_failures = Counter(
            "panicbot_observer_failures",
            "Statistics lost because an observer failed (the database is down, say)",
            ["observer"],
            registry=self.registry,
        )
        self.shared_state_failures = Gauge(
            "panicbot_shared_state_failures",
            "Redis errors answered by the in-process fallback",
            registry=self.registry,
        )

    def looked_up(self, platform: str, result: LookupResult, seconds: float) -> None:
        self.lookups.labels(platform, result.status).inc()
        self.latency.labels(platform).observe(seconds)
        if result.best is not None:
            self.matches.labels(platform, confidence_band(result.best.confidence)).inc()

    def auto_replied(self, platform: str, record_id: str) -> None:
        self.auto_replies.labels(platform).inc()

    def voted(self, platform: str, vote: str) -> None:
        self.votes.labels(platform, vote).inc()

    def api_error(self, platform: str, error: str) -> None:
        self.api_errors.labels(platform, error[:60]).inc()

    def catalog_loaded(self, records: int, versions: list[str], sources: list[str]) -> None:
        self.catalog_records.set(records)
        self.catalog_info.info({"versions": ",".join(versions) or "none", "sources": ",".join(sources)[:500]})

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
