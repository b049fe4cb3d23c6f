"""``BedrockEmulator``: a loopback AWS Bedrock runtime speaking Converse and ConverseStream.

Owns the HTTP side of the emulated service — ``POST /model/{modelId}/converse`` (JSON) and
``/converse-stream`` (real AWS event-stream frames from ``bedrock_frames``, so botocore parses
them), the SigV4 ``Authorization`` check, injected failures, the record of every request — and
the scripted replies each model family gives (Claude signs its thinking with an HMAC and returns
``redactedContent`` when the prompt holds Anthropic's documented redaction trigger; GPT-5.6 / xAI
return only ``redactedContent``; DeepSeek-R1, gpt-oss and the others readable text). What it
refuses is ``bedrock_rules``'. Nothing here imports the codecs it is used to test.

    with BedrockEmulator() as emu:
        ...  # --base-url emu.endpoint_url
        emu.received[-1].body
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from thoughtline.testing.bedrock_frames import stream_bytes
from thoughtline.testing.bedrock_rules import (
    Rejection,
    Values,
    check_replay,
    check_shape,
    cross_region,
    family,
)
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.testing.server import InjectedFailure, Received
from thoughtline.testing.signing import DEFAULT_SECRET, Signer
from thoughtline.testing.toolargs import arguments

#: The string that makes Claude return redacted thinking (Anthropic's documented test trigger,
#: used by the recorded pydantic-ai-bedrock-claude-redacted cassettes).
REDACTION_TRIGGER = "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING"


def _json(status: int, body: Any, kind: str = "") -> Response:
    headers = {"x-amzn-errortype": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"} \
        if kind else None
    return Response(orjson.dumps(body), status_code=status, media_type="application/json",
                    headers=headers)


def _auth_problem(headers: Mapping[str, str], region: str) -> str:
    """SigV4: an ``AWS4-HMAC-SHA256`` Authorization header scoped to this region and service
    (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html)."""
    value = headers.get("authorization", "")
    if not value.startswith("AWS4-HMAC-SHA256 ") or "x-amz-date" not in headers:
        return "Missing Authentication Token"
    if f"/{region}/bedrock/aws4_request" not in value:
        return "Credential should be scoped to a valid region."
    return ""


_SIGNATURE_MISMATCH = ("The request signature we calculated does not match the signature you "
                       "provided. Check your AWS Secret Access Key and signing method. Consult "
                       "the service documentation for details.")


def _signature_ok(url: str, headers: Mapping[str, str], body: bytes, region: str,
                  keys: tuple[str, str]) -> bool:
    """Recompute the SigV4 signature over what arrived (method, path, signed headers, body) with
    the credentials the test gave the client: a body edited after signing fails."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    value = headers["authorization"]
    fields = dict(part.strip().split("=", 1) for part in value.split(" ", 1)[1].split(","))
    signed = fields.get("SignedHeaders", "").split(";")
    request = AWSRequest(method="POST", url=url, data=body,
                         headers={name: headers[name] for name in signed if name in headers})
    request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(Credentials(*keys), "bedrock", region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    return expected == fields.get("Signature")


class _Script:
    """What the emulated model says: a tool call when tools are offered and no result came back
    yet, else an answer; reasoning in the family's own shape."""

    def __init__(self, values: Values, region: str) -> None:
        self.values, self.region = values, region

    def reply(self, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        last = messages[-1].get("content", ())
        results = [b["toolResult"] for b in last if "toolResult" in b]
        tools = (body.get("toolConfig") or {}).get("tools") or ()
        turn = len(messages)
        thought = f"Thinking about turn {turn} of this conversation."
        if results:
            said = " ".join(str(c.get("text", "")) for r in results for c in r.get("content", ()))
            answer: list[dict[str, Any]] = [{"text": f"The tool said: {said}"}]
            stop = "end_turn"
        elif tools:
            spec = tools[0]["toolSpec"]
            schema = (spec.get("inputSchema") or {}).get("json")
            use_id = "tooluse_" + hashlib.sha256(f"{model}{turn}".encode()).hexdigest()[:22]
            answer = [{"toolUse": {"input": arguments(schema, "London"),
                                   "name": spec["name"], "toolUseId": use_id}}]
            stop = "tool_use"
        else:
            answer, stop = [{"text": f"Answer to turn {turn}."}], "end_turn"
        content = self._reasoning(model, thought, body) + answer
        if family(model) == "deepseek-r1":
            content = answer + content  # the recorded DeepSeek-R1 answers put text first
        return {"metrics": {"latencyMs": 1}, "output": {"message": {
            "content": content, "role": "assistant"}}, "stopReason": stop,
            "usage": {"inputTokens": len(orjson.dumps(messages)) // 4, "outputTokens": 20,
                      "totalTokens": len(orjson.dumps(messages)) // 4 + 20}}

    def _reasoning(self, model: str, thought: str, body: Mapping[str, Any]) -> list[Any]:
        kind = family(model)
        if kind == "claude":
            if REDACTION_TRIGGER in orjson.dumps(body["messages"]).decode():
                return [{"reasoningContent": {"redactedContent":
                                              self.values.claude_redacted(model)}}]
            signature = self.values.claude_signature(model, thought)
            return [{"reasoningContent": {"reasoningText": {"signature": signature,
                                                            "text": thought}}}]
        if kind == "redacted-only":
            return [{"reasoningContent": {"redactedContent": self.values.encrypted(model, "")}}]
        readable: list[dict[str, Any]] = [
            {"reasoningContent": {"reasoningText": {"text": thought}}}]
        if kind == "kimi-k3":
            bound = "elsewhere" if cross_region(model) else self.region
            readable.append({"reasoningContent": {"redactedContent":
                                                  self.values.encrypted(model, bound)}})
        return readable


class BedrockEmulator:
    """A loopback Bedrock runtime. ``wraps`` maps application-inference-profile ARNs to the
    model each one wraps; ``region`` is where it serves (and what SigV4 must be scoped to)."""

    def __init__(self, *, region: str = "us-east-1", port: int = 0,
                 secret: bytes = DEFAULT_SECRET, wraps: Mapping[str, str] | None = None,
                 credentials: tuple[str, str] | None = None) -> None:
        self.region = region
        #: (access key id, secret key): when given, every signature is recomputed and checked.
        self.credentials = credentials
        self.wraps = dict(wraps or {})
        self.values = Values(Signer(secret))
        self.received: list[Received] = []
        self.failures: deque[InjectedFailure] = deque()
        self._script = _Script(self.values, region)
        self._server = LoopbackServer(self._app(), port=port, name="bedrock-emulator")

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:PORT``: botocore's ``endpoint_url`` (``--base-url``)."""
        return self._server.origin

    def fail_next(self, status: int, message: str, kind: str = "ValidationException") -> None:
        """Answer the next request with ``{"message": message}`` and ``status``."""
        self.failures.append(InjectedFailure(status=status, body={"message": message},
                                             headers={"x-amzn-errortype": kind}))

    def accepted(self) -> list[Received]:
        return [r for r in self.received if r.status == 200]

    def _app(self) -> Starlette:
        async def converse(request: Request) -> Response:
            return await self._handle(request, stream=False)

        async def converse_stream(request: Request) -> Response:
            return await self._handle(request, stream=True)

        return Starlette(routes=[
            Route("/model/{model:path}/converse", converse, methods=["POST"]),
            Route("/model/{model:path}/converse-stream", converse_stream, methods=["POST"]),
        ])

    async def _handle(self, request: Request, *, stream: bool) -> Response:
        raw = await request.body()
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        response = self._answer(request, raw, body, stream=stream)
        self.received.append(Received(path=request.url.path, headers={
            k.lower(): v for k, v in request.headers.items()}, body=body, raw=raw,
            status=response.status_code))
        return response

    def _answer(self, request: Request, raw: bytes, body: Any, *, stream: bool) -> Response:
        if self.failures:
            failure = self.failures.popleft()
            return _json(failure.status, failure.body, failure.headers["x-amzn-errortype"])
        headers = {k.lower(): v for k, v in request.headers.items()}
        problem = _auth_problem(headers, self.region)
        if problem:
            return _json(403, {"message": problem}, "UnrecognizedClientException")
        if self.credentials is not None:
            raw_path = request.scope.get("raw_path") or request.url.path.encode()
            url = f"{self.endpoint_url}{raw_path.decode('ascii')}"
            if not _signature_ok(url, headers, raw, self.region, self.credentials):
                return _json(403, {"message": _SIGNATURE_MISMATCH}, "InvalidSignatureException")
        model = self.wraps.get(request.path_params["model"], request.path_params["model"])
        rejection: Rejection | None = check_shape(body) or check_replay(
            model, body, self.values, region=self.region)
        if rejection is not None:
            return _json(rejection.status, {"message": rejection.message}, rejection.kind)
        reply = self._script.reply(model, body)
        if not stream:
            return _json(200, reply)
        return Response(stream_bytes(reply), media_type="application/vnd.amazon.eventstream")

    def start(self) -> Self:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
