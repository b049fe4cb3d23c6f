"""Rows <-> canonical values, shared by every backend.

A message is stored as a *skeleton* (its lossless JSON with every opaque value lifted out) plus one
*payload* per opaque value. Opaque values are ``Reasoning.signature``/``data``/``native``,
``ToolCall.native`` and ``Message.native``; strings are stored as their exact UTF-8 bytes, native
records as the orjson bytes of the parsed JSON. Payloads are keyed by the digest of their bytes, so
identical values are stored once; the skeleton is keyed by the message id (the digest of
``messages.dumps``) and carries its own digest.

On load every payload is verified against its digest. A payload that is missing or fails
verification is *reported* (``LoadProblem``) and the part it belongs to is not loaded: a reasoning
part is dropped, a tool call or message loses its native record. A skeleton that fails verification
raises ``CorruptPayload``: the turn's visible content itself cannot be trusted. Values nest within
the bound every reader shares (``shape.MAX_DEPTH``; the skeleton's own few levels aside): a message
deeper than that is refused on write (``StoreError``), and a row that is deeper all the same (a
crafted or damaged database) is treated as corrupt on read, like a digest mismatch, instead of
failing deep in a parser or a recursive copy. This module owns that policy and does no I/O.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.shape import MAX_DEPTH, deeper_than, too_deep
from thoughtline.errors import CorruptPayload, StoreError
from thoughtline.messages import Message, digest, dumps, message_from_json, message_to_json
from thoughtline.store.db import Row
from thoughtline.store.records import LoadProblem, ProblemKind, SessionRecord
from thoughtline.verdicts import Verdict

SKELETON_VERSION = 1
MESSAGE_LEVEL = -1  # PayloadRef.part of a message-level native record
#: The levels a skeleton adds around a native value left in it (skeleton, "m", "parts", a part).
_SKELETON_LEVELS = 4

#: Opaque fields lifted out of each part type (the tags of ``messages.part_to_json``).
_OPAQUE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "reasoning": ("signature", "data", "native"),
    "tool_call": ("native",),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class PayloadRef:
    """Where one opaque value lives: part index (``MESSAGE_LEVEL``: the message), field, size."""

    part: int
    field: str
    digest: str
    size: int


@dataclass(frozen=True, kw_only=True, slots=True)
class EncodedMessage:
    """A message ready to be written: its id, its skeleton and its payloads (digest -> bytes)."""

    id: str
    skeleton: bytes
    skeleton_digest: str
    refs: tuple[PayloadRef, ...]
    payloads: Mapping[str, bytes]


@dataclass(frozen=True, kw_only=True, slots=True)
class Skeleton:
    """A verified, parsed skeleton row, waiting for its payloads."""

    seq: int
    id: str
    created_at: float
    body: Mapping[str, Any]
    refs: tuple[PayloadRef, ...]


def encode_message(message: Message) -> EncodedMessage:
    """Split a message into its skeleton and payloads; ``id`` is ``digest(dumps(message))``."""
    body = message_to_json(message)
    refs: list[PayloadRef] = []
    payloads: dict[str, bytes] = {}
    holders = [(index, part) for index, part in enumerate(body["parts"])]
    holders.append((MESSAGE_LEVEL, body))
    for index, holder in holders:
        fields = _OPAQUE_FIELDS.get(holder.get("t", ""), ()) if index >= 0 else ("native",)
        for name in fields:
            if name not in holder:
                continue
            data = _to_bytes(name, holder.pop(name))
            key = digest(data)
            payloads[key] = data
            refs.append(PayloadRef(part=index, field=name, digest=key, size=len(data)))
    wrapped = {"v": SKELETON_VERSION, "m": body,
               "r": [[r.part, r.field, r.digest, r.size] for r in refs]}
    try:
        skeleton = orjson.dumps(wrapped)
    except orjson.JSONEncodeError as exc:
        raise StoreError(f"the message cannot be stored: {exc}") from exc
    if deeper_than(wrapped, MAX_DEPTH + _SKELETON_LEVELS, raw=skeleton):
        raise StoreError(f"the message cannot be stored: {too_deep('a value in it')}")
    return EncodedMessage(id=digest(dumps(message)), skeleton=skeleton,
                          skeleton_digest=digest(skeleton), refs=tuple(refs), payloads=payloads)


def _to_bytes(name: str, value: Any) -> bytes:
    if name != "native":
        return str(value).encode("utf-8")
    try:
        data = orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        raise StoreError(f"the message's {name} record cannot be stored: {exc}") from exc
    if deeper_than(value, raw=data):
        raise StoreError(f"the message cannot be stored: {too_deep(f'its {name} record')}")
    return data


def _from_bytes(name: str, data: bytes) -> Any:
    """The stored value; ``ValueError`` when it is not one (not UTF-8, not JSON, too deep)."""
    if name != "native":
        return data.decode("utf-8")
    value = orjson.loads(data)
    if deeper_than(value, raw=data):
        raise ValueError(too_deep("it"))
    return value


def parse_skeleton(session_id: str, row: Row) -> Skeleton:
    """Verify and parse one ``(seq, message_id, created_at, skeleton, skeleton_digest)`` row."""
    seq, message_id, created_at, raw, stored_digest = row
    if raw is None:
        raise _corrupt(session_id, seq, message_id, "the message row is missing")
    data = bytes(raw) if not isinstance(raw, str) else raw.encode("utf-8")
    if digest(data) != stored_digest:
        raise _corrupt(session_id, seq, message_id, "its bytes no longer match their digest")
    try:
        parsed = orjson.loads(data)
        refs = tuple(PayloadRef(part=int(p), field=str(f), digest=str(d), size=int(s))
                     for p, f, d, s in parsed["r"])
        body = parsed["m"]
        version = parsed["v"]
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise _corrupt(session_id, seq, message_id, f"it is not a valid skeleton ({exc})") from exc
    if deeper_than(parsed, MAX_DEPTH + _SKELETON_LEVELS, raw=data):
        raise _corrupt(session_id, seq, message_id, too_deep("its skeleton"))
    if version != SKELETON_VERSION:
        raise StoreError(f"session {session_id}, message {seq}: stored in format {version!r}, "
                         "which this thoughtline does not know; upgrade thoughtline.")
    return Skeleton(seq=seq, id=message_id, created_at=created_at, body=body, refs=refs)


def assemble(session_id: str, skeleton: Skeleton,
             payloads: Mapping[str, bytes]) -> tuple[Message, list[LoadProblem]]:
    """Put verified payloads back; parts whose payload fails are left out and reported."""
    body = dict(skeleton.body)
    parts = [dict(p) for p in body["parts"]]
    problems: list[LoadProblem] = []
    dropped: set[int] = set()
    for ref in skeleton.refs:
        holder = body if ref.part == MESSAGE_LEVEL else parts[ref.part]
        value, detail = _verified(ref, payloads.get(ref.digest))
        if detail is None:
            holder[ref.field] = value
            continue
        record = ref.part == MESSAGE_LEVEL
        problems.append(LoadProblem(seq=skeleton.seq, digest=ref.digest, detail=detail,
                                    kind=ProblemKind.RECORD if record else ProblemKind.PAYLOAD,
                                    part=ref.part))
        if ref.part != MESSAGE_LEVEL and parts[ref.part].get("t") == "reasoning":
            dropped.add(ref.part)
    body["parts"] = [p for i, p in enumerate(parts) if i not in dropped]
    if problems:
        body["damaged"] = True  # not what the model saw: replay policies may treat it as such
    try:
        return message_from_json(body), problems
    except (KeyError, TypeError, ValueError) as exc:
        raise _corrupt(session_id, skeleton.seq, skeleton.id,
                       f"it does not describe a message ({exc})") from exc


def _verified(ref: PayloadRef, data: bytes | None) -> tuple[Any, str | None]:
    """The payload's value, or None and why it cannot be used."""
    what = f"{ref.field} payload" if ref.part == MESSAGE_LEVEL else \
        f"{ref.field} payload of part {ref.part}"
    if data is None:
        return None, f"{what} is missing; the part was not loaded and will not be sent"
    data = bytes(data)
    if digest(data) != ref.digest:
        return None, (f"{what} is corrupt ({len(data)} bytes stored, {ref.size} expected, "
                      "digest mismatch); the part was not loaded and will not be sent")
    try:
        return _from_bytes(ref.field, data), None
    except ValueError as exc:  # also UnicodeDecodeError and orjson.JSONDecodeError
        return None, f"{what} cannot be decoded ({exc}); the part was not loaded"


def _corrupt(session_id: str, seq: int, message_id: str, why: str) -> CorruptPayload:
    return CorruptPayload(
        f"session {session_id}: the stored message at position {seq} ({message_id}) is corrupt: "
        f"{why}. Its content cannot be trusted or sent. To continue from the turns before it: "
        f"thoughtline sessions branch {session_id} --at {seq}, then chat -r or export the new "
        "branch; "
        f"'thoughtline sessions show {session_id}' lists the damaged turns.")


# --- sessions and verdicts ----------------------------------------------------------------------


def config_to_text(model_config: Mapping[str, Any] | None) -> str:
    """Model config as JSON text (provider names and key *variable names*, never keys)."""
    try:
        return orjson.dumps(dict(model_config or {})).decode("utf-8")
    except TypeError as exc:
        raise StoreError(f"model config is not JSON-serializable: {exc}") from exc


def session_from_row(row: Row) -> SessionRecord:
    """A row of ``engine.SESSION_SELECT``."""
    sid, title, created, updated, parent, fork, config, tenant, turns = row
    try:
        model_config = orjson.loads(config) if config else {}
    except orjson.JSONDecodeError as exc:
        raise StoreError(f"session {sid}: stored model config is corrupt ({exc})") from exc
    return SessionRecord(id=sid, title=title, created_at=created, updated_at=updated,
                         parent_id=parent, fork_point=fork, model_config=model_config,
                         turns=int(turns), tenant=tenant)


def verdict_to_row(verdict: Verdict, learned_at: float) -> tuple[Any, ...]:
    return (verdict.provider, verdict.host, verdict.model,
            orjson.dumps(sorted(verdict.drop)).decode("utf-8"), int(verdict.pad),
            verdict.reason, learned_at)


def verdict_from_row(row: Row) -> Verdict:
    """A ledger row; a damaged one is a ``StoreError`` saying how to drop it (a verdict is
    only a lesson: forgetting it means the next rejection teaches it again)."""
    provider, host, model, drop, pad, reason = row[:6]
    try:
        carriers = orjson.loads(drop)
    except orjson.JSONDecodeError:
        carriers = None
    if not isinstance(carriers, list) or not all(isinstance(c, str) for c in carriers):
        where = " ".join(shlex.quote(str(v)) for v in (provider, host, model))
        raise StoreError(f"the learned verdict for {where} is damaged (its dropped carriers are "
                         "not a list of names); drop it with `thoughtline routes forget "
                         f"--provider {shlex.quote(str(provider))} --model "
                         f"{shlex.quote(str(model))}`")
    return Verdict(provider=provider, host=host, model=model, drop=frozenset(carriers),
                   pad=bool(pad), reason=reason)
