"""What the Gemini emulator refuses, with the real service's words.

Owns the request checks of the Gemini personality: the closed request schema (an unknown field is a
400), and thought signatures on replayed model turns. Facts and wordings, each cited:

- Gemini 3 (and 4) require a signature on the first ``functionCall`` of every replayed step;
  parallel calls after it need none (ai.google.dev/gemini-api/docs/thought-signatures; recorded
  in ``fantasy-gemini31-pro-parallel-calls-first-signature-only.i1.request.json``, accepted). Gemini
  2.5 and Gemini 3 Pro Image do not enforce it (Vertex thought-signatures page,
  docs.cloud.google.com/gemini-enterprise-agent-platform/models/thinking/thought-signatures).
- Missing: AI Studio "Function call is missing a thought_signature in functionCall parts. …",
  Vertex "Unable to submit request because function call `NAME` in the N. content block is missing
  a `thought_signature`." (lbjlaq/Antigravity-Manager#1513, google-gemini/gemini-cli#26682;
  tests/fixtures/SOURCES.md, category 7).
- Altered or truncated: AI Studio "Corrupted thought signature.", Vertex "Unable to submit request
  because Thought signature is not valid.. Learn more: …" (google-gemini/gemini-cli#13467;
  decolua/9router#301).
- The documented dummy ``skip_thought_signature_validator`` is accepted on calls Gemini did not
  make (ai.google.dev/gemini-api/docs/thought-signatures, FAQ) — unless the personality plays a
  route that rejects it (roocode PR #10331 reports Gemini 3 rejecting it), which answers as for a
  corrupted signature.
- A text-part signature is only recommended: one that is a valid value but belongs to other text
  is silently ignored (an incompatible signature "is silently omitted and the request still
  succeeds", the Vertex thought-signatures page above); the emulator records it so tests can see it.
- Unknown fields: Google's "Invalid JSON payload received. Unknown name …: Cannot find field."
- A part must hold data: "A ``Content`` message must have at least one ``Part``" and "A ``Part``
  must contain one of the accepted types in ``Part.data``" (the ``Content`` reference,
  docs.cloud.google.com/gemini-enterprise-agent-platform/reference/rest/Shared.Types/Content).
  A part with none is "* GenerateContentRequest.contents[i].parts[j].data: required oneof field
  'data' must have one initialized field" (router-for-me/CLIProxyAPI#1293, a ``{}`` part); an
  empty ``text`` counts as none, the front end reading proto3 JSON, where "" is the unset value
  (router-for-me/CLIProxyAPI#3485, kittors/CliRelay#264, both 2026). Older recordings here
  (``llm-gemini-gemini3-flash-stream-json-array-thought-signature.i1.request.json``,
  ``pydantic-ai-gemini3-flash-parallel-calls-first-signature-only.i0.request.json``) were
  accepted with one: the emulator plays the stricter, later service. An empty text that carries
  a signature is Gemini's own streamed tail (ai.google.dev/gemini-api/docs/thought-signatures)
  and goes back as received: accepted (Chevey339/kelivo b9e675b1 keeps it, drops the unsigned).
- Tool schemas: ``functionDeclarations[i].parameters`` is the OpenAPI-subset ``Schema``, whose
  parser refuses any keyword it has no field for, at any depth (``check_tools``, sources there);
  ``parametersJsonSchema`` takes any JSON Schema; both on one declaration is a 400.

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

from thoughtline.testing.signing import SKIP_THOUGHT_SIGNATURE, OpaqueKind, Signer

KIND: OpaqueKind = "gemini-signature"
SIG = "thoughtSignature"

_TOP_LEVEL = frozenset({"contents", "systemInstruction", "tools", "toolConfig",
                        "generationConfig", "safetySettings", "cachedContent", "labels"})
_PART = frozenset({"text", "thought", SIG, "functionCall", "functionResponse", "inlineData",
                   "fileData", "executableCode", "codeExecutionResult", "videoMetadata"})
#: The members of ``Part.data`` (the ``Content`` reference above); the others are metadata.
_DATA = frozenset({"text", "inlineData", "fileData", "functionCall", "functionResponse",
                   "executableCode", "codeExecutionResult"})
_CALL = frozenset({"name", "args", "id"})
_RESPONSE = frozenset({"name", "response", "id"})
_CONTENT = frozenset({"role", "parts"})
_ENFORCING = re.compile(r"gemini-([3-9]|\d\d)")

# Tool declarations. ``parameters`` is Gemini's ``Schema`` (an OpenAPI 3.0 subset), read by a
# protobuf JSON parser: a key it has no field for, at any depth, fails the WHOLE request with
# `Invalid JSON payload received. Unknown name "additionalProperties" at
# 'tools[0].function_declarations[0].parameters': Cannot find field.` — brainlid/langchain PR #599
# (additionalProperties), router-for-me/CLIProxyAPI#97 ($schema), mpfaffenberger/code_puppy PR #923
# and tailcallhq/forgecode PR #3426 (propertyNames), nanbingxyz/5ire#42. Every such key is listed,
# one line each, with a google.rpc.BadRequest field violation; the path is in proto names and a
# map entry goes by position (`…parameters.properties[2].value.items`, `….any_of[0]`:
# hinthornw/trustcall#43, zed-extensions/mcp-server-brave-search#12). The Gemini API's Schema
# fields (ai.google.dev/api/caching#Schema); Vertex AI's Schema (REST v1 and v1beta1) also has
# additionalProperties, ref and defs. Protobuf JSON takes a field's proto (snake_case) name too.
# ``parametersJsonSchema`` is a protobuf Value: any JSON Schema, mutually exclusive with
# ``parameters`` (FunctionDeclaration reference; firebase-android-sdk PR #7850 saw the service
# refuse both at once — that 400's wording is not recorded, the one below is a stand-in).
_SCHEMA_FIELDS = ("type", "format", "title", "description", "nullable", "enum", "maxItems",
                  "minItems", "properties", "required", "minProperties", "maxProperties",
                  "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering",
                  "default", "items", "minimum", "maximum")
_VERTEX_SCHEMA_FIELDS = ("additionalProperties", "ref", "defs")
_DECLARATION_FIELDS = ("name", "description", "behavior", "parameters", "parametersJsonSchema",
                       "response", "responseJsonSchema")


def _snake(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), name)


def _names(*fields: str) -> frozenset[str]:
    return frozenset(fields) | {_snake(name) for name in fields}


_SCHEMA = _names(*_SCHEMA_FIELDS)
_VERTEX_SCHEMA = _SCHEMA | _names(*_VERTEX_SCHEMA_FIELDS)
_DECLARATION = _names(*_DECLARATION_FIELDS)


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
            refused = (_unknown(where, part, _PART)
                       or ("functionCall" in part
                           and _unknown(f"{where}.function_call", part["functionCall"], _CALL))
                       or ("functionResponse" in part
                           and _unknown(f"{where}.function_response",
                                        part["functionResponse"], _RESPONSE)))
            if refused:
                return refused
            if not _holds_data(part):
                return error(400, f"* GenerateContentRequest.{where}.data: required oneof field "
                                  "'data' must have one initialized field")
    return None


def _holds_data(part: Mapping[str, Any]) -> bool:
    """Is one of ``Part.data`` set? An unsigned empty text is not (see the module's list)."""
    if any(name in part for name in _DATA if name != "text"):
        return True
    text = part.get("text")
    return isinstance(text, str) and (text != "" or SIG in part)


def _unknown_names(found: Sequence[tuple[str, str]]) -> Refusal:
    """Google's answer to unknown keys: one line per (key, path), and the field violations."""
    lines = [f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}': "
             "Cannot find field." for key, where in found]
    violations = [{"field": where, "description": line}
                  for (_, where), line in zip(found, lines, strict=True)]
    refusal = error(400, "\n".join(lines))
    refusal.body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                                         "fieldViolations": violations}]
    return refusal


def _schema_keys(schema: Any, where: str, allowed: frozenset[str],
                 found: list[tuple[str, str]]) -> None:
    """Every key of ``schema`` and its sub-schemas the ``Schema`` type has no field for."""
    if not isinstance(schema, Mapping):
        return
    for key, value in schema.items():
        if key not in allowed:
            found.append((key, where))
        elif key in ("properties", "defs") and isinstance(value, Mapping):
            for n, sub in enumerate(value.values()):
                _schema_keys(sub, f"{where}.{key}[{n}].value", allowed, found)
        elif key == "items":
            _schema_keys(value, f"{where}.items", allowed, found)
        elif key in ("anyOf", "any_of") and isinstance(value, list):
            for n, sub in enumerate(value):
                _schema_keys(sub, f"{where}.any_of[{n}]", allowed, found)


def check_tools(tools: Any, *, vertex: bool) -> Refusal | None:
    """The function declarations' schemas (see the comment on ``_SCHEMA_FIELDS``)."""
    if not isinstance(tools, list):
        return None
    allowed = _VERTEX_SCHEMA if vertex else _SCHEMA
    found: list[tuple[str, str]] = []
    for i, tool in enumerate(tools):
        declarations = (tool.get("functionDeclarations") or tool.get("function_declarations")
                        if isinstance(tool, Mapping) else None)
        for j, declaration in enumerate(declarations or ()):
            where = f"tools[{i}].function_declarations[{j}]"
            if not isinstance(declaration, Mapping):
                continue
            found += [(key, where) for key in declaration if key not in _DECLARATION]
            given = {_snake(key) for key in declaration}
            if {"parameters", "parameters_json_schema"} <= given:
                return error(400, f"* GenerateContentRequest.{where}: parameters and "
                                  "parameters_json_schema are mutually exclusive.")
            if "parameters" in declaration:
                _schema_keys(declaration["parameters"], f"{where}.parameters", allowed, found)
    return _unknown_names(found) if found else None


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
