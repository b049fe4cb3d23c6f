"""OpenTelemetry traces of the line of thought: off unless the standard ``OTEL_*`` variables ask.

Owns the cheap check that decides whether tracing is on (``configured``), the ``Tracer`` protocol
the turn engine and the gateway talk to, and the three span shapes built on it: a request span
(``SpanKind.SERVER``, one per gateway request, ended with its access-log line; a child of the
client's trace when its ``traceparent`` header names one), a turn span (``SpanKind.INTERNAL``, one
per turn sent outside a gateway request, e.g. ``Session.send``) and an attempt span
(``SpanKind.CLIENT``, one per HTTP request sent upstream, ended with its request-log record).

Tracing is on when ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set
(or ``OTEL_TRACES_EXPORTER`` names an exporter), unless ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none``. Off, nothing here imports opentelemetry: the SDK is imported by
``tracing.sdk`` only when the check says on, and a missing ``thoughtline[otel]`` extra is said
once on stderr. The attribute values come from the request and access logs
(``tracing.attributes``); nothing here reads a wire field. Message content goes into spans only
with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``; keys and tokens never do.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from thoughtline.tracing import attributes as attrs

if TYPE_CHECKING:
    from thoughtline.messages import Message

__all__ = ["PROCESS", "AttemptSpan", "Kind", "Process", "Tracer", "TurnSpan", "configured",
           "default", "from_environ", "request_ended", "request_span"]

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
CAPTURE_VAR = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

Kind = attrs.Kind


class Tracer(Protocol):
    """Starts and ends spans; a span is an opaque handle (the SDK's own ``Span``)."""

    #: Whether message content may go into spans (the user opted in).
    capture_content: bool

    def start(self, name: str, *, kind: Kind, parent: object | None,
              attributes: attrs.Attributes) -> object: ...

    def end(self, span: object, attributes: attrs.Attributes, *, error: str = "") -> None: ...

    def remote_parent(self, headers: Mapping[str, str]) -> object | None:
        """The span a request's propagation headers (W3C ``traceparent``) name, as a parent
        for ``start``; None when they name none or an invalid one."""
        ...

    def shutdown(self) -> None: ...


def configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces (reads the environment, imports nothing)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters == "none":
        return False
    return bool(exporters) or any(env.get(name) for name in ENDPOINT_VARS)


def from_environ(environ: Mapping[str, str] | None = None) -> Tracer | None:
    """A tracer of its own (its provider, exporter and batch processor) when the environment
    asks for traces, else None. The caller shuts it down (that flushes what is queued)."""
    env = os.environ if environ is None else environ
    if not configured(env):
        return None
    try:
        from thoughtline.tracing.sdk import SdkTracer
    except ImportError as exc:
        _say(f"OTEL_* asks for traces but OpenTelemetry is not installed ({exc}): install "
             "thoughtline[otel]; tracing is off")
        return None
    return SdkTracer.create(env, capture_content=_capture(env))


class Process:
    """"The process's tracer" (``default()``), as a value: what a ``TurnEngine`` uses unless it
    is given one (the gateway gives each engine its own, or None)."""


PROCESS = Process()
_DEFAULT: list[Tracer | None] = []


def default() -> Tracer | None:
    """The process's tracer for library turns: the environment is read on first use, once."""
    if not _DEFAULT:
        _DEFAULT.append(from_environ())
    return _DEFAULT[0]


def request_span(tracer: Tracer | None, method: str, path: str,
                 headers: Mapping[str, str] | None = None) -> object | None:
    """A gateway request's span (``SpanKind.SERVER``), or None when tracing is off: a child of
    the client's span when ``headers`` carry a valid ``traceparent``, else a new trace's root."""
    if tracer is None:
        return None
    parent = tracer.remote_parent(headers) if headers else None
    return tracer.start(f"{method} {path}", kind="server", parent=parent,
                        attributes=attrs.request_start(method, path))


def request_ended(tracer: Tracer | None, span: object | None,
                  line: Mapping[str, object]) -> None:
    """End a request's span with what its access-log ``line`` says."""
    if tracer is None or span is None:
        return
    status = line.get("status")
    error = str(status) if isinstance(status, int) and status >= 500 else ""
    tracer.end(span, attrs.request_end(line), error=error)


class AttemptSpan:
    """The spans of one upstream attempt of a turn: one per HTTP request sent, so a transport
    retry ends the current span (``error.type``: the status that was retried) and starts the
    next; the last ends with the attempt's request-log record."""

    __slots__ = ("_base", "_name", "_parent", "_resent", "_span", "_tracer")

    def __init__(self, tracer: Tracer, parent: object | None, *, provider: str, model: str,
                 host: str, extra: attrs.Attributes) -> None:
        self._tracer, self._parent = tracer, parent
        self._name = f"{attrs.OPERATION} {model}"
        self._base = {**attrs.attempt_start(provider, model, host), **extra}
        self._resent = 0
        self._span = tracer.start(self._name, kind="client", parent=parent, attributes=self._base)

    def retried(self, status: int | None) -> None:
        """The transport sends the request again (``status``: why; None: it was not reached)."""
        self._tracer.end(self._span, {}, error=str(status) if status else "unreachable")
        self._resent += 1
        self._span = self._tracer.start(
            self._name, kind="client", parent=self._parent,
            attributes={**self._base, attrs.RESEND_COUNT: self._resent})

    def finished(self, record: Mapping[str, object], *, error: str = "",
                 sent: Sequence[Message] = (), answer: Message | None = None) -> None:
        """End with the attempt's request-log ``record``; ``sent`` and ``answer`` go in only
        when content capture is on."""
        values = attrs.attempt_end(record)
        if self._tracer.capture_content:
            values.update(attrs.content(sent, answer))
        self._tracer.end(self._span, values, error=error)


class TurnSpan:
    """The span of a turn sent outside a gateway request (a library or CLI turn, or the summary
    request of a compaction): its attempts' spans are its children, and it is a child of the
    current OpenTelemetry span, if any (an application's own)."""

    __slots__ = ("_tracer", "span")

    def __init__(self, tracer: Tracer, *, provider: str, model: str, session: str,
                 purpose: str) -> None:
        self._tracer = tracer
        #: The handle its attempts' spans take as their parent.
        self.span = tracer.start(f"{purpose or 'turn'} {model}", kind="internal", parent=None,
                                 attributes=attrs.turn_start(provider, model, session, purpose))

    def finished(self, outcome: str, *, error: str = "") -> None:
        """End it: ``outcome`` as the request log says it (ok, error, cancelled …), ``error``
        the ``error.type`` of a turn that failed."""
        self._tracer.end(self.span, attrs.turn_end(outcome), error=error)


def _capture(env: Mapping[str, str]) -> bool:
    return env.get(CAPTURE_VAR, "").strip().lower() == "true"


def _say(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr closed: nowhere to say it
        print(f"thoughtline: {text}", file=sys.stderr, flush=True)
