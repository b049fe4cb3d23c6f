"""What the Gemini emulator refuses, with the real service's words.

Owns the request checks of the Gemini personality: the closed request schema (an unknown field is a
400), and thought signatures on replayed model turns. Facts and wordings, each cited:

- Gemini 3 (and 4) require a signature on the first ``functionCall`` of every replayed step;
  parallel calls after it need none (provider-contracts §6; provider-updates §1b "Rules"; recorded
  in ``fantasy-gemini31-pro-parallel-calls-first-signature-only.i1.request.json``, accepted). Gemini
  2.5 and Gemini 3 Pro Image do not enforce it (provider-updates §1b).
- Missing: AI Studio "Function call is missing a thought_signature in functionCall parts. …",
  Vertex "Unable to submit request because function call `NAME` in the N. content block is missing
  a `thought_signature`." (provider-updates §1b "Exact wordings").
- Altered or truncated: AI Studio "Corrupted thought signature.", Vertex "Unable to submit request
  because Thought signature is not valid.. Learn more: …" (same section).
- The documented dummy ``skip_thought_signature_validator`` is accepted on calls Gemini did not
  make (provider-contracts §6) — unless the personality plays a route that rejects it (roocode
  PR #10331 reports Gemini 3 rejecting it), which answers as for a corrupted signature.
- A text-part signature is only recommended: one that is a valid value but belongs to other text
  is silently ignored (an incompatible signature "is silently omitted and the request still
  succeeds", provider-updates §1b); the emulator records it so tests can see it.
- Unknown fields: Google's "Invalid JSON payload received. Unknown name …: Cannot find field."

Signatures are the shared HMAC values of ``signing``: a function-call signature is bound to the
call's name and arguments (compared as parsed JSON, as the service reads a protobuf Struct), a
text signature to its text. Nothing here imports the codecs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.testing.signing import SKIP_THOUGHT_SIGNATURE, Signer

KIND = "gemini-signature"
SIG = "thoughtSignature"

_TOP_LEVEL = frozenset({"contents", "systemInstruction", "tools", "toolConfig",
                        "generationConfig", "safetySettings", "cachedContent", "labels"})
_PART = frozenset({"text", "thought", SIG, "functionCall", "functionResponse", "inlineData",
                   "fileData", "executableCode", "codeExecutionResult", "videoMetadata"})
_CALL = frozenset({"name", "args", "id"})
_RESPONSE = frozenset({"name", "response", "id"})
_CONTENT = frozenset({"role", "parts"})
_ENFORCING = re.compile(r"gemini-([3-9]|\d\d)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    status: int
    body: dict[str, Any]


@dataclass(slots=True, kw_only=True)
class Checked:
    """What a request carried that the emulator accepted: signatures seen, and ignored ones."""

    verified: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    dummies: int = 0


def call_binding(name: Any, args: Any) -> str:
    """What a function-call signature is bound to: the name and the arguments as parsed JSON."""
    canonical = orjson.dumps(args if args is not None else {}, option=orjson.OPT_SORT_KEYS)
    return f"call|{name}|{canonical.decode()}"


def text_binding(text: str) -> str:
    return f"text|{text}"


def error(status: int, message: str, code_name: str = "INVALID_ARGUMENT") -> Refusal:
    return Refusal(status=status, body={"error": {"code": status, "message": message,
                                                  "status": code_name}})


def enforces_signatures(model: str) -> bool:
    lowered = model.lower()
    return bool(_ENFORCING.search(lowered)) and "image" not in lowered


def _unknown(where: str, value: Any, allowed: frozenset[str]) -> Refusal | None:
    if not isinstance(value, Mapping):
        return error(400, f"Invalid JSON payload received. Expected an object at '{where}'.")
    for name in value:
        if name not in allowed:
            return error(400, f"Invalid JSON payload received. Unknown name \"{name}\" at "
                              f"'{where}': Cannot find field.")
    return None


def check_schema(body: Mapping[str, Any]) -> Refusal | None:
    refusal = _unknown("", body, _TOP_LEVEL)
    if refusal is not None:
        return refusal
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return error(400, "* GenerateContentRequest.contents: contents is not specified")
    for i, content in enumerate(contents):
        refusal = _unknown(f"contents[{i}]", content, _CONTENT)
        if refusal is not None:
            return refusal
        parts = content.get("parts")
        if not isinstance(parts, list) or not parts:
            return error(400, f"* GenerateContentRequest.contents[{i}].parts: contents.parts "
                              "must not be empty.")
        for j, part in enumerate(parts):
            where = f"contents[{i}].parts[{j}]"
            refusal = (_unknown(where, part, _PART)
                       or ("functionCall" in part
                           and _unknown(f"{where}.function_call", part["functionCall"], _CALL))
                       or ("functionResponse" in part
                           and _unknown(f"{where}.function_response",
                                        part["functionResponse"], _RESPONSE)))
            if refusal:
                return refusal
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """The signature rules one request is checked against."""

    signer: Signer
    model: str
    vertex: bool
    accept_dummy: bool = True

    def invalid(self) -> Refusal:
        if self.vertex:
            return error(400, "Unable to submit request because Thought signature is not valid.."
                              " Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/"
                              "model-reference/gemini")
        return error(400, "Corrupted thought signature.")

    def missing(self, name: str, block: int) -> Refusal:
        if self.vertex:
            return error(400, f"Unable to submit request because function call `{name}` in the "
                              f"{block}. content block is missing a `thought_signature`.")
        return error(400, "Function call is missing a thought_signature in functionCall parts. "
                          "This is required for tools to work correctly, and missing "
                          "thought_signature may lead to degraded model performance. "
                          f"Additional data, function call `default_api:{name}` , position "
                          f"{block}. Please refer to https://ai.google.dev/gemini-api/docs/"
                          "thought-signatures for more details.")

    def check(self, contents: Sequence[Mapping[str, Any]], checked: Checked) -> Refusal | None:
        for index, content in enumerate(contents, start=1):
            if content.get("role") != "model":
                continue
            first_call = True
            for part in content["parts"]:
                refusal = self._part(part, index, first_call, checked)
                if refusal is not None:
                    return refusal
                if "functionCall" in part:
                    first_call = False
        return None

    def _part(self, part: Mapping[str, Any], block: int, first_call: bool,
              checked: Checked) -> Refusal | None:
        signature = part.get(SIG)
        call = part.get("functionCall")
        if call is not None:
            if signature is None:
                if first_call and enforces_signatures(self.model):
                    return self.missing(str(call.get("name")), block)
                return None
            if signature == SKIP_THOUGHT_SIGNATURE:
                checked.dummies += 1
                return None if self.accept_dummy else self.invalid()
            if not self.signer.verify(KIND, signature,
                                      call_binding(call.get("name"), call.get("args"))):
                return self.invalid()
            checked.verified.append(signature)
            return None
        if signature is None:
            return None
        if not self.signer.verify(KIND, signature):
            return self.invalid()
        text = part.get("text")
        if isinstance(text, str) and self.signer.verify(KIND, signature, text_binding(text)):
            checked.verified.append(signature)
        else:
            checked.ignored.append(signature)
        return None
