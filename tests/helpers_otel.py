"""A loopback OTLP/HTTP traces receiver for the tracing tests, and readers of what it got.

Owns test conveniences only: the receiver (every span posted to ``/v1/traces``, decoded, and each
raw payload kept for the never-a-key checks), the standard ``OTEL_*`` variables pointed at it, a
gateway's spans flushed to it, a span's attributes as a dict, and the search for secrets.
Expectations stay in the tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from thoughtline import tracing

if TYPE_CHECKING:
    from thoughtline.gateway.app import Gateway

SERVER, CLIENT = Span.SpanKind.SPAN_KIND_SERVER, Span.SpanKind.SPAN_KIND_CLIENT
INTERNAL = Span.SpanKind.SPAN_KIND_INTERNAL
STATUS_ERROR = 2  # Status.StatusCode.STATUS_CODE_ERROR


class Receiver:
    """A loopback OTLP/HTTP traces endpoint: every span posted to ``/v1/traces``, decoded."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.raw: list[bytes] = []
        spans, raw = self.spans, self.raw

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    raw.append(body)
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            spans.extend(scope.spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def of_kind(self, kind: int) -> list[Span]:
        """Its spans of one ``SpanKind``, in the order they started."""
        return sorted((s for s in self.spans if s.kind == kind),
                      key=lambda s: s.start_time_unix_nano)


@contextmanager
def receiving(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    """A running receiver, the standard variables pointing traces at it (and nothing else)."""
    got = Receiver()
    got.thread.start()
    for name in ("OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_PROPAGATORS", tracing.CAPTURE_VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", got.endpoint)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "thoughtline-test")
    try:
        yield got
    finally:
        got.server.shutdown()
        got.server.server_close()


def flushed(gateway: Gateway) -> None:
    """What the gateway's shutdown does (the loopback server runs no lifespan): export what
    the batch processor holds — once every request has ended (a stream's span ends when its
    response has closed, which may be just after the client read its last byte)."""
    assert gateway.tracer is not None
    deadline = time.monotonic() + 10  # a bound, not an assertion
    while time.monotonic() < deadline and any(
            sample.value for metric in gateway.metrics.in_flight.collect()
            for sample in metric.samples):
        time.sleep(0.02)
    gateway.tracer.shutdown()


def attributes(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in value.array_value.values]
        else:
            out[kv.key] = getattr(value, kind)
    return out


def leaks(receiver: Receiver, secrets: Iterable[str]) -> list[str]:
    """Where any of ``secrets`` shows: in a raw export payload, or in a span's attributes."""
    secrets = tuple(secrets)
    found = []
    for raw in receiver.raw:
        found += [s for s in secrets if s.encode() in raw]
    for span in receiver.spans:
        found += [f"{k}={v}" for k, v in attributes(span).items()
                  if any(s in str(v) for s in secrets)]
    return found


def no_content_nor_secrets(receiver: Receiver, secrets: Iterable[str]) -> None:
    assert receiver.spans
    assert not leaks(receiver, secrets)
    for span in receiver.spans:
        assert not [k for k in attributes(span) if k.startswith(("gen_ai.input",
                                                                 "gen_ai.output"))]
