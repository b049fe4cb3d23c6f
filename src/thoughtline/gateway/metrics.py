"""The gateway's Prometheus metrics: what ``GET /metrics`` shows, fed from the request path.

Owns the metric families and what feeds them: the access-log line of each request (face,
upstream, status, outcome, durations, rehydration counts, the wording rows of the rejections it
learned from), each upstream request's request-log record (the reasoning carriers it sent, by
field; the summarizer requests of a compaction; the tokens it used, by type, as the GenAI
semantic conventions' ``gen_ai.client.token.usage``), the store's failures, and each upstream's
pool, read when scraped. Labels are closed
sets of names (faces, upstreams, statuses, outcomes, carrier fields, wording rows): never a
token, a key, a tenant or message text.

With ``PROMETHEUS_MULTIPROC_DIR`` set (``serve --workers N`` sets it to a directory it owns)
every worker writes its values there and a scrape of any worker shows the sum over all of them.
Knows no HTTP framework and no wire names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from thoughtline.requestlog import RecordWriter
from thoughtline.tracing.attributes import OPERATION, provider_name

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
PREFIX = "thoughtline_gateway"

#: Rehydration outcomes: how a resent assistant turn was found (by its index key's kind), or not.
REHYDRATION_OUTCOMES = ("id", "content", "minted", "unmatched", "forged_or_foreign")
_BY_KIND = {"call": "id", "context": "content", "content": "content", "mint": "minted"}
#: The GenAI conventions' token usage: a histogram with these bucket boundaries, labelled with
#: the operation, provider, requested model and token type ("input" (the whole prompt), "output";
#: and, as ``gen_ai.client.inference.usage.*`` counts them, "reasoning" (a part of "output") and
#: "cache_read" (a part of "input")).
TOKEN_USAGE = "gen_ai_client_token_usage"
TOKEN_TYPES = ("input", "output", "reasoning", "cache_read")
_TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                  16777216, 67108864)
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


def multiprocess_dir() -> str:
    return os.environ.get(MULTIPROC_ENV, "")


class Metrics:
    """The gateway's metric families, registered in a registry of their own."""

    def __init__(self, pools: Callable[[], Mapping[str, Any]] = dict) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._pools = pools
        reg = self.registry

        def counter(name: str, text: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(f"{PREFIX}_{name}", text, labels, registry=reg)

        def histogram(name: str, text: str, labels: tuple[str, ...]) -> Histogram:
            return Histogram(f"{PREFIX}_{name}", text, labels, registry=reg, buckets=_BUCKETS)

        def gauge(name: str, text: str, labels: tuple[str, ...]) -> Gauge:
            return Gauge(f"{PREFIX}_{name}", text, labels, registry=reg,
                         multiprocess_mode="livesum")

        self.requests = counter("requests", "Requests answered, by face, upstream, status and "
                                "outcome.", ("face", "upstream", "status", "outcome"))
        self.duration = histogram("request_duration_seconds", "Whole request time at the "
                                  "gateway (a stream: until its last frame).", ("face",))
        self.first_byte = histogram("upstream_first_byte_seconds", "From sending upstream to "
                                    "its first event (a whole answer: the answer).",
                                    ("upstream",))
        self.overhead = histogram("overhead_seconds", "The gateway's own time in a request "
                                  "that went upstream: its whole time less the time spent "
                                  "waiting on the upstream (parsing, store, rehydration, "
                                  "encoding, writing the answer).", ("face",))
        self.rehydration = counter("rehydration", "Assistant turns a client resent, by how "
                                   "they were matched (or not).", ("outcome",))
        self.carriers = counter("carriers_sent", "Reasoning carriers sent upstream, by API "
                                "and field.", ("api", "kind"))
        self.learned = counter("rejections_learned", "Upstream rejections the fallback "
                               "learned from, by wording row.", ("upstream", "wording"))
        self.repaired = counter("rejections_repaired", "Requests a learned rejection was "
                                "repaired in (the retry answered), by wording row.",
                                ("upstream", "wording"))
        self.compactions = counter("compaction_requests", "Summarizer requests the gateway "
                                   "sent to compact a conversation (a Responses client's "
                                   "compaction, or a turn over its context window), by API.",
                                   ("api",))
        self.tokens = Histogram(TOKEN_USAGE, "Tokens each upstream request used, by type "
                                "(the GenAI semantic conventions' gen_ai.client.token.usage).",
                                ("gen_ai_operation_name", "gen_ai_provider_name",
                                 "gen_ai_request_model", "gen_ai_token_type"),
                                registry=reg, buckets=_TOKEN_BUCKETS)
        self.store_errors = counter("store_errors", "Store calls that failed.")
        self.in_flight = gauge("in_flight_requests", "Requests being answered, by face.",
                               ("face",))
        self.pool = gauge("upstream_connections", "Each upstream's pool: connections open, "
                          "in use, and requests waiting for one.", ("upstream", "state"))

    # --- feeding ------------------------------------------------------------------------------

    def started(self, face: str) -> None:
        self.in_flight.labels(face).inc()

    def finished(self, line: Mapping[str, Any], marks: Mapping[str, float],
                 in_flight: str = "", upstream_s: float = 0.0) -> None:
        """One request's access-log ``line``, its ``marks`` (monotonic times of "started",
        "upstream" sent, "first_byte", "ended"), the face it was counted in flight under and
        the seconds it spent waiting on the upstream."""
        face = str(line.get("face") or in_flight or "none")
        upstream = str(line.get("upstream") or "none")
        outcome = str(line.get("outcome", ""))
        if in_flight:
            self.in_flight.labels(in_flight).dec()
        self.requests.labels(face, upstream, str(line.get("status", "")), outcome).inc()
        self.duration.labels(face).observe(marks["ended"] - marks["started"])
        if "upstream" in marks:
            own = marks["ended"] - marks["started"] - upstream_s
            self.overhead.labels(face).observe(max(own, 0.0))
            if "first_byte" in marks:
                self.first_byte.labels(upstream).observe(marks["first_byte"] - marks["upstream"])
        for kind, count in (line.get("rehydrated_by") or {}).items():
            self.rehydration.labels(_BY_KIND.get(kind, "content")).inc(count)
        if line.get("unmatched"):
            self.rehydration.labels("unmatched").inc(line["unmatched"])
        if line.get("minted_rejected"):
            self.rehydration.labels("forged_or_foreign").inc(line["minted_rejected"])
        for wording in line.get("wordings") or ():
            self.learned.labels(upstream, wording).inc()
            if outcome == "ok":
                self.repaired.labels(upstream, wording).inc()
        self._read_pools()

    def sent(self, record: Mapping[str, Any]) -> None:
        """One upstream request's request-log ``record``."""
        api = str(record.get("api", ""))
        if record.get("purpose") == "compaction":
            self.compactions.labels(api).inc()
        for kind, count in (record.get("carriers") or {}).items():
            if isinstance(count, int) and count > 0:
                self.carriers.labels(api, str(kind)).inc(count)
        usage = record.get("usage") or {}
        provider, model = provider_name(str(record.get("provider", ""))), str(record.get("model"))
        for kind in TOKEN_TYPES:
            count = usage.get(kind)
            if isinstance(count, int) and (count > 0 or kind in ("input", "output")):
                self.tokens.labels(OPERATION, provider, model, kind).observe(count)

    def store_failed(self) -> None:
        self.store_errors.inc()

    def _read_pools(self) -> None:
        for name, state in self._pools().items():
            for part in ("connections", "in_use", "waiting"):
                self.pool.labels(name, part).set(getattr(state, part, 0))

    # --- showing ------------------------------------------------------------------------------

    def text(self) -> bytes:
        """The Prometheus text exposition: this process's, or every worker's when multi-process."""
        self._read_pools()
        if not multiprocess_dir():
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)
        return generate_latest(merged)

    def close(self) -> None:
        """This worker is gone: its live gauges stop counting (multi-process mode)."""
        if multiprocess_dir():
            multiprocess.mark_process_dead(os.getpid())


def worker_died(pid: int, directory: str) -> None:
    """A worker that died without closing its metrics (killed mid-request): its live gauges
    (requests in flight, pool states) stop counting; its counters stay in the sums."""
    multiprocess.mark_process_dead(pid, directory)


class RequestLogTee:
    """A request log that also feeds ``Metrics.sent`` (``log`` may be None: metrics only)."""

    def __init__(self, log: RecordWriter | None, metrics: Metrics) -> None:
        self._log = log
        self._metrics = metrics

    def write(self, record: Mapping[str, Any]) -> None:
        self._metrics.sent(record)
        if self._log is not None:
            self._log.write(record)
