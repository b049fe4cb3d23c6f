"""The OpenTelemetry SDK behind ``thoughtline.tracing``: imported only when tracing is on.

Owns the tracer provider of one gateway (or of a library process): its resource
(``OTEL_SERVICE_NAME``/``OTEL_RESOURCE_ATTRIBUTES``, else ``service.name=thoughtline``), its
sampler (``OTEL_TRACES_SAMPLER``), a ``BatchSpanProcessor`` (``OTEL_BSP_*``) and its exporter:
OTLP over HTTP/protobuf (``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``, ``…_HEADERS``, ``…_TIMEOUT``,
read by the exporter itself), or the console with ``OTEL_TRACES_EXPORTER=console``. The provider
is this tracer's own, never installed as the global one: thoughtline does not take over an
application's tracing. A gateway request's incoming context is read by the process's propagator
(``opentelemetry.propagate``: ``OTEL_PROPAGATORS``, by default W3C ``traceparent`` and
``baggage``). Knows no attribute names (``tracing.attributes`` does).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.trace import SpanKind, Status, StatusCode

from thoughtline.tracing.attributes import Attributes, Kind

SCOPE = "thoughtline"
KINDS = {"server": SpanKind.SERVER, "client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}


class SdkTracer:
    """``tracing.Tracer`` on an SDK ``TracerProvider`` of its own."""

    def __init__(self, provider: TracerProvider, *, capture_content: bool = False) -> None:
        self.provider = provider
        self.capture_content = capture_content
        self._tracer = provider.get_tracer(SCOPE)

    @classmethod
    def create(cls, env: Mapping[str, str], *, capture_content: bool = False) -> SdkTracer:
        named = env.get("OTEL_SERVICE_NAME") or "service.name=" in env.get(
            "OTEL_RESOURCE_ATTRIBUTES", "")
        resource = Resource.create({} if named else {"service.name": SCOPE})
        provider = TracerProvider(resource=resource, shutdown_on_exit=True)
        provider.add_span_processor(BatchSpanProcessor(_exporter(env)))
        return cls(provider, capture_content=capture_content)

    def start(self, name: str, *, kind: Kind, parent: object | None,
              attributes: Attributes) -> object:
        context = trace.set_span_in_context(parent) if isinstance(parent, trace.Span) else None
        return self._tracer.start_span(name, context=context, kind=KINDS[kind],
                                       attributes=attributes)

    def remote_parent(self, headers: Mapping[str, str]) -> object | None:
        # Extracted into an empty context: a header that names no valid span must not leave
        # the caller's current context standing in as the parent.
        span = trace.get_current_span(propagate.extract(headers, context=Context()))
        return span if span.get_span_context().is_valid else None

    def end(self, span: object, attributes: Attributes, *, error: str = "") -> None:
        if not isinstance(span, trace.Span):
            return
        span.set_attributes(attributes)
        if error:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    def shutdown(self) -> None:
        """Export what is queued, then stop (the batch processor's thread ends)."""
        self.provider.shutdown()


def _exporter(env: Mapping[str, str]) -> SpanExporter:
    names = {n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")}
    if "console" in names and "otlp" not in names:
        return ConsoleSpanExporter()
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
    if protocol != "http/protobuf":
        with contextlib.suppress(OSError, ValueError):
            print(f"thoughtline: OTLP protocol {protocol!r} is not supported; traces are sent "
                  "as http/protobuf", file=sys.stderr, flush=True)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()
