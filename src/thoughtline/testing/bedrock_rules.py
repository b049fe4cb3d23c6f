"""What the Bedrock emulator refuses, with the real error texts, and the opaque values it issues.

Owns the Converse contract as documented, independently of thoughtline's codec (nothing here
imports ``thoughtline.codecs`` or ``thoughtline.routes``): the conversation shape every model
enforces, and each model family's replay rules. Each rule cites its source. Error bodies are
Bedrock's ``{"message": …}`` ValidationException shape (recorded in
``tests/fixtures/errors/bedrock-*.response.json``).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from thoughtline.testing.signing import Signer

_GEO = re.compile(r"^(?:us|eu|apac|global|us-gov|jp|au|ca)\.(?=[a-z0-9-]+\.)")


@dataclass(frozen=True, kw_only=True, slots=True)
class Rejection:
    status: int
    message: str
    kind: str = "ValidationException"


def base_model(model: str) -> str:
    """The foundation model an id names (ARN and geography prefix removed), lower-cased."""
    lowered = model.lower().rsplit("/", 1)[-1] if model.lower().startswith("arn:") \
        else model.lower()
    return _GEO.sub("", lowered)


def cross_region(model: str) -> bool:
    return bool(_GEO.match(model.lower().rsplit("/", 1)[-1]))


def family(model: str) -> str:
    """The replay contract a model id falls under (docs/providers.md, Bedrock; sources in
    routes/bedrock.toml)."""
    m = base_model(model)
    if "claude" in m:
        return "claude"
    if "deepseek.r1" in m or "deepseek-r1" in m:
        return "deepseek-r1"
    if "openai.gpt-5" in m or m.startswith("xai.") or "grok" in m:
        return "redacted-only"
    if "kimi-k3" in m:
        return "kimi-k3"
    if "gpt-oss" in m:
        return "gpt-oss"
    if "nova" in m or "minimax" in m:
        return "no-empty-signature"
    return "plain"


def claude_model(model: str) -> str:
    """``claude-sonnet-4-5`` for every spelling of that model (signatures are per model)."""
    m = base_model(model)
    m = m[m.find("claude"):] if "claude" in m else m
    m = re.sub(r"-v\d+(?::\d+)?$", "", m.split("@", 1)[0])
    return re.sub(r"-\d{8}$", "", m)


# --- opaque values this emulator issues ---------------------------------------------------------


class Values:
    """Issues and verifies the opaque reasoning values of each family (HMAC, ``Signer``)."""

    def __init__(self, signer: Signer) -> None:
        self.signer = signer

    def claude_signature(self, model: str, text: str) -> str:
        return self.signer.issue("anthropic-signature", f"{claude_model(model)}\0{text}")

    def claude_redacted(self, model: str) -> str:
        """``redactedContent``: base64 of the Anthropic ``data`` string (fixtures SOURCES.md 5)."""
        data = self.signer.issue("anthropic-signature", f"{claude_model(model)}\0redacted")
        return base64.b64encode(data.encode()).decode()

    def encrypted(self, model: str, bound: str) -> str:
        """``redactedContent`` of GPT-5.6 / xAI / Kimi: base64 of ``rsn_…`` (SOURCES.md 6)."""
        value = self.signer.issue("openai-encrypted", f"{base_model(model)}\0{bound}")
        return base64.b64encode(("rsn_" + value).encode()).decode()

    def signature_ok(self, model: str, text: str, signature: Any) -> bool:
        return self.signer.verify("anthropic-signature", signature,
                                  f"{claude_model(model)}\0{text}")

    def redacted_ok(self, model: str, wire: Any) -> bool:
        data = _unbase64(wire)
        if data is None:
            return False
        return self.signer.verify("anthropic-signature", data, f"{claude_model(model)}\0redacted")

    def encrypted_ok(self, model: str, wire: Any, bound: str) -> bool:
        data = _unbase64(wire)
        if data is None or not data.startswith("rsn_"):
            return False
        return self.signer.verify("openai-encrypted", data[4:], f"{base_model(model)}\0{bound}")


def _unbase64(wire: Any) -> str | None:
    if not isinstance(wire, str):
        return None
    try:
        return base64.b64decode(wire.encode("ascii"), validate=True).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        return None


# --- the rules ----------------------------------------------------------------------------------


def _blocks(messages: list[Any]) -> Iterator[tuple[int, int, str, Mapping[str, Any]]]:
    for i, message in enumerate(messages):
        for j, block in enumerate(message.get("content") or ()):
            if isinstance(block, Mapping):
                yield i, j, message.get("role", ""), block


def check_shape(body: Any) -> Rejection | None:
    """What every Converse model refuses (docs.aws.amazon.com/bedrock Converse
    API reference: start and end with a user message, no blank
    text; alternation and tool pairing as Bedrock words them)."""
    messages = body.get("messages") if isinstance(body, Mapping) else None
    if not isinstance(messages, list) or not messages:
        return Rejection(status=400, message="1 validation error detected: Value null at "
                         "'messages' failed to satisfy constraint: Member must not be null")
    if messages[0].get("role") != "user":
        return Rejection(status=400, message="A conversation must start with a user message. "
                         "Try again with a conversation that starts with a user message.")
    if messages[-1].get("role") != "user":
        return Rejection(status=400, message="A conversation must end with a user message. "
                         "Try again with a conversation that ends with a user message.")
    for before, after in itertools.pairwise(messages):
        if before.get("role") == after.get("role"):
            return Rejection(status=400, message="A conversation must alternate between user "
                             "and assistant roles. Make sure the conversation alternates between "
                             "user and assistant roles and try again.")
    for i, j, _, block in _blocks(messages):
        if "text" in block and not str(block["text"]).strip():
            return Rejection(status=400, message=f"The text field in the ContentBlock object at "
                             f"messages.{i}.content.{j} is blank. Add text to the text field, "
                             "and try again.")
        reasoning = block.get("reasoningContent")
        if isinstance(reasoning, Mapping) and "reasoningText" in reasoning and not isinstance(
                reasoning["reasoningText"].get("text"), str):
            # API_runtime_ReasoningContentBlock: a signature-only block needs text "".
            return Rejection(status=400, message="reasoning content format incorrect. Either "
                             "'text' or 'redactedContent' must be set.")
    return _tool_pairing(messages)


def _tool_pairing(messages: list[Any]) -> Rejection | None:
    for i, message in enumerate(messages):
        uses = {b["toolUse"]["toolUseId"] for b in message.get("content", ()) if "toolUse" in b}
        if message.get("role") != "assistant" or not uses:
            continue
        answer = messages[i + 1].get("content", ()) if i + 1 < len(messages) else ()
        results = {b["toolResult"]["toolUseId"] for b in answer if "toolResult" in b}
        if results != uses:
            return Rejection(status=400, message=f"Expected toolResult blocks at messages."
                             f"{i + 1}.content for the following Ids: {', '.join(sorted(uses))}")
    return None


def _reasoning(messages: list[Any]) -> Iterator[tuple[int, int, Mapping[str, Any]]]:
    for i, j, role, block in _blocks(messages):
        reasoning = block.get("reasoningContent")
        if role == "assistant" and isinstance(reasoning, Mapping):
            yield i, j, reasoning


def check_replay(model: str, body: Mapping[str, Any], values: Values, *,
                 region: str) -> Rejection | None:
    """The family's replay rules (API_runtime_ReasoningContentBlock, docs/providers.md Bedrock,
    the extended-thinking page for Claude)."""
    messages = body["messages"]
    kind = family(model)
    for i, message in enumerate(messages):
        content = message.get("content", ())
        if message.get("role") == "assistant" and content and all(
                "reasoningContent" in b for b in content):
            # Sonnet 5 / Fable 5.1 (hermes-agent #105780): treated as assistant prefill.
            return Rejection(status=400, message=f"messages.{i}: an assistant message that holds "
                             "only reasoningContent is treated as assistant prefill, which this "
                             "model does not support.")
    for i, j, reasoning in _reasoning(messages):
        refused = _refused(kind, model, i, j, reasoning, values, region=region)
        if refused is not None:
            return refused
    if kind == "claude":
        return _claude_loop(body)
    return None


_UNSUPPORTED = ("This model doesn't support the {field} field{extra}. Remove {field} and try "
                "again.")


def _unsupported(field: str, extra: str = "") -> Rejection:
    return Rejection(status=400, message=_UNSUPPORTED.format(field=field, extra=extra))


def _refused(kind: str, model: str, i: int, j: int, reasoning: Mapping[str, Any],
             values: Values, *, region: str) -> Rejection | None:
    item = reasoning.get("reasoningText")
    redacted = reasoning.get("redactedContent")
    if kind == "deepseek-r1":
        # langchain-aws #401, aws-samples/bedrock-chat #845.
        return Rejection(status=400, message="User messages cannot contain reasoning content. "
                         "Please remove the reasoning content and try again.")
    if kind == "claude":
        if isinstance(item, Mapping):
            # maximhq/bifrost#6942: "thinking.signature: Field required"
            if "signature" not in item:
                return Rejection(status=400, message=f"messages.{i}.content.{j}.thinking."
                                 "signature: Field required")
            if not values.signature_ok(model, item.get("text", ""), item["signature"]):
                return Rejection(status=400, message=f"messages.{i}.content.{j}: Invalid "
                                 "`signature` in `thinking` block")
        elif not values.redacted_ok(model, redacted):
            return Rejection(status=400, message=f"messages.{i}.content.{j}: Invalid 'data' in "
                             "'redacted_thinking' block")
        return None
    if kind == "redacted-only":
        if isinstance(item, Mapping):  # inspect_ai #5217, vercel/ai #19058
            return _unsupported("reasoningContent.reasoningText.text", " for assistant messages")
        if not values.encrypted_ok(model, redacted, ""):
            # bifrost #6834: the wrong value gives an opaque 500 on OpenAI / xAI models.
            return Rejection(status=500, kind="InternalServerException", message="The system "
                             "encountered an unexpected error during processing. Try your "
                             "request again.")
        return None
    if kind == "kimi-k3" and redacted is not None:
        if cross_region(model) or not values.encrypted_ok(model, redacted, region):
            # hermes-agent #115865: a global profile may serve the request elsewhere.
            return Rejection(status=400, message='The model returned the following errors: '
                             '{"error":{"code":"validation_error","message":"Encrypted content '
                             'cannot be used in a different region from the one that created '
                             'it.","type":"invalid_request_error"}}')
        return None
    if isinstance(item, Mapping) and "signature" in item and (
            kind == "gpt-oss" or not item["signature"]):  # strands-agents #682; bifrost #6942
        return _unsupported("reasoningContent.reasoningText.signature")
    if redacted is not None and kind in ("gpt-oss", "no-empty-signature", "plain"):
        return _unsupported("reasoningContent.redactedContent")  # by analogy: it issues none
    return None


def _claude_loop(body: Mapping[str, Any]) -> Rejection | None:
    """With thinking on, the last assistant turn of a tool loop must start with its thinking
    (extended-thinking page; anthropics/claude-code#10627: "Expected `thinking` or
    `redacted_thinking`, but found `tool_use`")."""
    extra = body.get("additionalModelRequestFields") or {}
    if not isinstance(extra, Mapping) or "thinking" not in extra:
        return None
    messages = body["messages"]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user" and any(
        "toolResult" not in b for b in m.get("content", ()))), default=0)
    for i in range(len(messages) - 1, last_user, -1):
        content = messages[i].get("content", ())
        if messages[i].get("role") == "assistant" and any("toolUse" in b for b in content):
            if "reasoningContent" not in content[0]:
                first = next(iter(content[0]), "text")
                found = {"toolUse": "tool_use"}.get(first, first)
                return Rejection(status=400, message=f"messages.{i}.content.0.type: Expected "
                                 f"`thinking` or `redacted_thinking`, but found `{found}`. When "
                                 "`thinking` is enabled, a final `assistant` message must start "
                                 "with a thinking block.")
            return None
    return None
