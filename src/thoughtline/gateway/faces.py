"""The gateway's client faces: one small object per client API, the same request path for all.

A ``Face`` is what differs between ``POST /v1/chat/completions`` and ``POST /v1/messages``: its
paths, how a body and headers become a ``ClientRequest``, how a finished turn is rendered whole
or as a stream, and its error shape. Everything else — tenancy, the body limit, model and alias
resolution, rehydration and storage, the access log — is the app's, shared by every face. The
faces hold no wire knowledge: each delegates to its API's client codec (``codecs.<api>.client``).
Gateway tokens are read the same way for every face: ``Authorization: Bearer …`` or
``x-api-key: …``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from thoughtline.codecs.anthropic import client as messages_client
from thoughtline.codecs.face import ClientRequest, ItemMemo
from thoughtline.codecs.openai_chat import client as chat_client
from thoughtline.codecs.openai_responses import client as responses_client
from thoughtline.codecs.openai_responses import reply as responses_reply
from thoughtline.codecs.openai_responses.tools import NO_TOOLS, ToolNames
from thoughtline.events import Done, Event
from thoughtline.messages import Usage


def token_of(headers: Mapping[str, str]) -> str | None:
    """The gateway token a request presents: a Bearer token, else ``x-api-key`` (None: none)."""
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    key = (headers.get("x-api-key") or "").strip()
    return key or None


@dataclass(frozen=True, kw_only=True, slots=True)
class Reply:
    """What an answer is labelled with: its id, the model the client asked for, its time, and
    the value minted for the turn (faces that hand reasoning back by reference use it)."""

    response_id: str
    model: str
    created: int = field(default_factory=lambda: int(time.time()))
    minted: str = ""
    include_usage: bool = False
    #: A Responses client's tools by the flat names upstreams see (``ToolNames``): a call goes
    #: back under the client's namespace and name, a custom tool's as a custom call.
    tool_names: ToolNames = NO_TOOLS
    #: The upstream's API (a face may render the answers of its own API differently).
    upstream_api: str = ""


class StreamWriter(Protocol):
    def start(self) -> bytes: ...

    def event(self, event: Event) -> bytes | None: ...

    def finish(self, done: Done) -> bytes: ...


class Face(Protocol):
    """One client API the gateway serves."""

    #: The API's name in the request log and access log ("chat", "messages" …).
    name: str
    #: The paths it answers (each also without ``/v1``).
    paths: tuple[str, ...]
    #: Whether its clients carry reasoning back by a minted reference.
    mints: bool

    def parse(self, body: Any, headers: Mapping[str, str],
              memo: ItemMemo | None = None) -> ClientRequest: ...

    def smallest_request(self, model: str) -> Mapping[str, Any]:
        """Its client's smallest request (the gateway parses one at start to warm up)."""
        ...

    def items(self, body: Any) -> list[Any] | None:
        """The parsed body's conversation items, a top-level array (None: none)."""
        ...

    def new_id(self) -> str: ...

    def whole(self, done: Done, reply: Reply) -> Mapping[str, Any]: ...

    def writer(self, reply: Reply) -> StreamWriter: ...

    def error_json(self, status: int, message: str, *, kind: str, code: str | None,
                   param: str | None) -> Mapping[str, Any]: ...

    def error_frame(self, status: int, message: str, *, kind: str,
                    code: str | None) -> bytes: ...


class _ChatWriter:
    """``ChunkWriter`` with the writer protocol's ``start`` (Chat streams have no preamble)."""

    __slots__ = ("_writer",)

    def __init__(self, reply: Reply) -> None:
        self._writer = chat_client.ChunkWriter(response_id=reply.response_id, model=reply.model,
                                               created=reply.created,
                                               include_usage=reply.include_usage)

    def start(self) -> bytes:
        return b""

    def event(self, event: Event) -> bytes | None:
        return self._writer.event(event)

    def finish(self, done: Done) -> bytes:
        return self._writer.finish(done)


class ChatFace:
    """``POST /v1/chat/completions``: OpenAI Chat clients (``codecs.openai_chat.client``)."""

    name = "chat"
    paths: tuple[str, ...] = ("/v1/chat/completions",)
    mints = False

    def parse(self, body: Any, headers: Mapping[str, str],
              memo: ItemMemo | None = None) -> ClientRequest:
        return chat_client.parse_request(body, memo)

    def smallest_request(self, model: str) -> Mapping[str, Any]:
        return chat_client.smallest_request(model)

    def items(self, body: Any) -> list[Any] | None:
        return chat_client.items_of(body)

    def new_id(self) -> str:
        return "chatcmpl-" + uuid.uuid4().hex

    def whole(self, done: Done, reply: Reply) -> Mapping[str, Any]:
        return chat_client.completion_json(done, response_id=reply.response_id,
                                           model=reply.model, created=reply.created)

    def writer(self, reply: Reply) -> StreamWriter:
        return _ChatWriter(reply)

    def error_json(self, status: int, message: str, *, kind: str, code: str | None,
                   param: str | None) -> Mapping[str, Any]:
        return chat_client.error_json(message, kind=kind, code=code, param=param)

    def error_frame(self, status: int, message: str, *, kind: str, code: str | None) -> bytes:
        return chat_client.error_frame(message, kind=kind, code=code)


class MessagesFace:
    """``POST /v1/messages``: Anthropic clients such as Claude Code (``codecs.anthropic.client``).

    ``kind`` values of the gateway's errors are Chat words; this face answers with the Messages
    error type of the status instead (``not_found_error``, ``authentication_error`` …).
    """

    name = "messages"
    paths: tuple[str, ...] = ("/v1/messages",)
    mints = True

    def parse(self, body: Any, headers: Mapping[str, str],
              memo: ItemMemo | None = None) -> ClientRequest:
        return messages_client.parse_request(body, headers, memo)

    def smallest_request(self, model: str) -> Mapping[str, Any]:
        return messages_client.smallest_request(model)

    def items(self, body: Any) -> list[Any] | None:
        return messages_client.items_of(body)

    def new_id(self) -> str:
        return "msg_" + uuid.uuid4().hex

    def whole(self, done: Done, reply: Reply) -> Mapping[str, Any]:
        return messages_client.message_json(done, response_id=reply.response_id,
                                            model=reply.model, minted=reply.minted)

    def writer(self, reply: Reply) -> StreamWriter:
        return messages_client.MessageStreamWriter(response_id=reply.response_id,
                                                   model=reply.model, minted=reply.minted)

    def error_json(self, status: int, message: str, *, kind: str, code: str | None,
                   param: str | None) -> Mapping[str, Any]:
        return messages_client.error_json(message, status=status)

    def error_frame(self, status: int, message: str, *, kind: str, code: str | None) -> bytes:
        return messages_client.error_frame(message, status=status)

    #: ``POST /v1/messages/count_tokens`` (priced by the one estimator, ``estimate``).
    count_paths: tuple[str, ...] = ("/v1/messages/count_tokens",)

    def count_json(self, tokens: int) -> Mapping[str, Any]:
        return messages_client.count_tokens_json(tokens)


class ResponsesFace:
    """``POST /v1/responses``: Codex, the Agents SDK, ``client.responses``
    (``codecs.openai_responses.client`` and ``.reply``).

    Errors keep the gateway's OpenAI ``kind`` words (they are this API's own); a stream that
    fails after it began ends with ``error`` and ``response.failed`` (the writer's ``fail``).
    """

    name = "responses"
    paths: tuple[str, ...] = ("/v1/responses",)
    mints = True

    def parse(self, body: Any, headers: Mapping[str, str],
              memo: ItemMemo | None = None) -> ClientRequest:
        return responses_client.parse_request(body, headers, memo)

    def smallest_request(self, model: str) -> Mapping[str, Any]:
        return responses_client.smallest_request(model)

    def items(self, body: Any) -> list[Any] | None:
        return responses_client.items_of(body)

    def new_id(self) -> str:
        return "resp_" + uuid.uuid4().hex

    def whole(self, done: Done, reply: Reply) -> Mapping[str, Any]:
        return responses_reply.whole_json(done, response_id=reply.response_id, model=reply.model,
                                          created=reply.created, minted=reply.minted,
                                          names=reply.tool_names)

    def writer(self, reply: Reply) -> StreamWriter:
        return responses_reply.ResponseStreamWriter(
            response_id=reply.response_id, model=reply.model, created=reply.created,
            minted=reply.minted, names=reply.tool_names,
            live=reply.upstream_api != responses_client.CLIENT_API)

    def error_json(self, status: int, message: str, *, kind: str, code: str | None,
                   param: str | None) -> Mapping[str, Any]:
        return responses_reply.error_json(message, status=status, kind=kind, code=code,
                                          param=param)

    def error_frame(self, status: int, message: str, *, kind: str, code: str | None) -> bytes:
        return responses_reply.error_frame(message, status=status, code=code)

    #: ``POST /v1/responses/compact``: the history in, exactly one ``compaction`` item out.
    compact_paths: tuple[str, ...] = ("/v1/responses/compact",)

    def own_compaction(self, request: ClientRequest, api: str) -> ClientRequest | None:
        """The request an upstream of ``api`` compacts itself, else None (the gateway does)."""
        if not isinstance(request, responses_client.ResponsesRequest):
            return None
        return responses_client.own_compaction(request, api)

    def compaction(self, reply: Reply, request: ClientRequest, *, endpoint: bool,
                   usage: Usage) -> Mapping[str, Any]:
        """The whole answer to a compaction (``endpoint``: ``/responses/compact``'s shape)."""
        if endpoint:
            return responses_reply.compacted_json(
                response_id=reply.response_id, created=reply.created, minted=reply.minted,
                user_items=responses_client.user_items(request), usage=usage)
        return responses_reply.compaction_json(response_id=reply.response_id, model=reply.model,
                                               created=reply.created, minted=reply.minted,
                                               usage=usage)


CHAT = ChatFace()
MESSAGES = MessagesFace()
RESPONSES = ResponsesFace()
FACES: Sequence[Face] = (CHAT, MESSAGES, RESPONSES)


def all_paths(face: Face) -> tuple[str, ...]:
    """Every path ``face`` answers: each of its paths with and without ``/v1``."""
    return both_ways(face.paths)


def both_ways(paths: Sequence[str]) -> tuple[str, ...]:
    """Each of ``paths`` with and without ``/v1``."""
    return tuple(p for path in paths for p in (path, path.removeprefix("/v1")))
