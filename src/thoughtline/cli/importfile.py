"""Reading a ``sessions export`` file back, as untrusted input.

Owns what an importable file must look like. Everything is checked before anything is written:
the first problem is reported as one ``ImportRejected`` naming its place in the file
(``messages[3].parts[0].kind``), so the store never holds half an import or a message that
``sessions show`` or a resume cannot read. An imported session keeps its conversation but is marked
as coming from a file (``IMPORTED_KEY`` in its model config): the provider URL and key variable the
file names are not trusted, and its request params and API settings are held out of the session's
config, used only with ``--trust-provider`` (see ``cli.trust``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from thoughtline.codecs import registry
from thoughtline.config import ProviderConfig
from thoughtline.errors import UsageError
from thoughtline.messages import Message, ReasoningKind, Role, message_from_json
from thoughtline.modelconfig import HELD_KEY, IMPORTED_KEY, hold_imported
from thoughtline.verdicts import Verdict

EXPORT_FORMAT = "thoughtline.session/1"
_MAX_DEPTH = 64  # far deeper than any export thoughtline writes; stops a crafted deep nesting
_ROLES = frozenset(get_args(Role))
_KINDS = frozenset(get_args(ReasoningKind))
_ECHO = ("auto", "always", "never")
_OPTIONAL_TEXT = ("text", "summary", "signature", "data")
#: What orjson (the store's encoder) can write: signed or unsigned 64-bit integers. A larger one
#: would fail to store; NaN and the infinities would be stored as null, changing the record.
_INT_RANGE = range(-(2**63), 2**64)


class _NonFinite(str):
    """A ``NaN``, ``Infinity`` or ``-Infinity`` in the file: kept to be named, never stored."""


class ImportRejected(UsageError):
    """The file is not an importable export; the message names where and why."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ImportPlan:
    """What an import will write: a title, the model config (marked untrusted), the messages."""

    title: str
    model_config: dict[str, Any]
    messages: tuple[Message, ...]
    provider: ProviderConfig


def read_export(raw: bytes, source: str) -> ImportPlan:
    """Parse and validate an export file's bytes; raises ``ImportRejected``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _reject(source, "", f"is not UTF-8 text (byte {exc.start})") from exc
    try:
        data = json.loads(text, parse_constant=_NonFinite)
    except RecursionError as exc:
        raise _reject(source, "", "is nested too deeply to be an export") from exc
    except ValueError as exc:
        raise _reject(source, "", f"is not JSON ({exc})") from exc
    _check_tree(source, data, "", 0)
    top = _object(source, data, "")
    if top.get("format") != EXPORT_FORMAT:
        raise _reject(source, "format", f"must be {EXPORT_FORMAT!r}, "
                      f"not {top.get('format')!r}")
    meta = _object(source, top.get("session"), "session")
    title = meta.get("title", "")
    if not isinstance(title, str):
        raise _reject(source, "session.title", "must be a string")
    for name in ("created_at", "updated_at"):
        value = meta.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _reject(source, f"session.{name}", f"must be a number, not {value!r}")
    config, provider = _model_config(source, meta.get("model_config"))
    listed = top.get("messages")
    if not isinstance(listed, list):
        raise _reject(source, "messages", "must be a list of messages")
    messages = tuple(_message(source, m, f"messages[{i}]") for i, m in enumerate(listed))
    # The file's params and settings are kept but shape requests only when the user trusts it.
    config[IMPORTED_KEY] = {"from": source, "at": round(time.time(), 3),
                            "provider_trusted": False, HELD_KEY: _earlier_held(source, config)}
    config = hold_imported(config)
    return ImportPlan(title=title, model_config=config, messages=messages, provider=provider)


def _reject(source: str, path: str, why: str) -> ImportRejected:
    where = f"{path} " if path else ""
    return ImportRejected(f"cannot import {source}: {where}{why}; nothing was imported")


def _check_tree(source: str, value: Any, path: str, depth: int) -> None:
    """Depth bound, and values the store writes back exactly: text without lone surrogates
    (``\\ud800`` escapes), finite numbers, integers in 64-bit range."""
    if depth > _MAX_DEPTH:
        raise _reject(source, path, f"is nested more than {_MAX_DEPTH} levels deep")
    if isinstance(value, _NonFinite):
        raise _reject(source, path or "(top level)", f"is {value}, which is not a JSON number "
                      "(it would be stored as null)")
    if isinstance(value, str):
        _utf8(source, value, path)
    elif isinstance(value, float) and not math.isfinite(value):
        raise _reject(source, path or "(top level)", "is a number too large for a JSON "
                      "number (it would be stored as null)")
    elif isinstance(value, int) and not isinstance(value, bool) and value not in _INT_RANGE:
        raise _reject(source, path or "(top level)", "is an integer outside the 64-bit range "
                      "the store can hold")
    elif isinstance(value, dict):
        for key, item in value.items():
            _utf8(source, key, path)
            _check_tree(source, item, f"{path}.{key}" if path else key, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_tree(source, item, f"{path}[{index}]", depth + 1)


def _utf8(source: str, text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _reject(source, path or "(top level)",
                      f"holds a lone surrogate (\\u{ord(text[exc.start]):04x}), which is not "
                      "text") from exc


def _object(source: str, value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        raise _reject(source, path or "the top level", f"must be a JSON object, not {kind}")
    return value


def _text(source: str, holder: Mapping[str, Any], name: str, path: str, *,
          required: bool = True) -> None:
    if name not in holder:
        if required:
            raise _reject(source, f"{path}.{name}", "is missing")
        return
    value = holder[name]
    if not isinstance(value, str) and not (value is None and not required):
        raise _reject(source, f"{path}.{name}", f"must be a string, not {value!r}"[:200])


def _flag(source: str, holder: Mapping[str, Any], name: str, path: str) -> None:
    if name in holder and not isinstance(holder[name], bool):
        raise _reject(source, f"{path}.{name}", "must be true or false")


def _model_config(source: str, raw: Any) -> tuple[dict[str, Any], ProviderConfig]:
    path = "session.model_config"
    config = dict(_object(source, raw, path))
    prov = _object(source, config.get("provider"), f"{path}.provider")
    for name in ("id", "model"):
        _text(source, prov, name, f"{path}.provider")
        if not prov[name].strip():
            raise _reject(source, f"{path}.provider.{name}", "is empty: the session could not "
                          "be resumed")
    for name in ("api", "base_url", "key_env", "region", "route_as", "auth", "project"):
        _text(source, prov, name, f"{path}.provider", required=False)
    if "api" in prov and prov["api"] not in registry.apis():  # else the import cannot resume
        raise _reject(source, f"{path}.provider.api",
                      f"must be one of {', '.join(registry.apis())}")
    if prov.get("echo", "auto") not in _ECHO:
        raise _reject(source, f"{path}.provider.echo", f"must be one of {', '.join(_ECHO)}")
    for index, verdict in enumerate(_list(source, config, "verdicts", path)):
        where = f"{path}.verdicts[{index}]"
        entry = _object(source, verdict, where)
        for name in ("provider", "host", "model", "reason"):
            _text(source, entry, name, where, required=name == "provider")
        drop = entry.get("drop", [])
        if not isinstance(drop, list) or not all(isinstance(d, str) for d in drop):
            raise _reject(source, f"{where}.drop", "must be a list of field names")
        _flag(source, entry, "pad", where)
        Verdict.from_json(entry)
    for index, fingerprint in enumerate(_list(source, config, "fingerprints", path)):
        if not isinstance(fingerprint, str):
            raise _reject(source, f"{path}.fingerprints[{index}]", "must be a string")
    for index, tool in enumerate(_list(source, config, "tools", path)):
        where = f"{path}.tools[{index}]"
        _text(source, _object(source, tool, where), "name", where)
        _text(source, tool, "description", where, required=False)
        if "parameters" in tool:
            _object(source, tool["parameters"], f"{where}.parameters")
    for name in ("params", "settings"):
        if name in config:
            _object(source, config[name], f"{path}.{name}")
    for api, values in dict(config.get("settings", {})).items():
        _object(source, values, f"{path}.settings.{api}")
    return config, ProviderConfig.from_json(prov)


def _one_of(value: Any, allowed: frozenset[str]) -> bool:
    return isinstance(value, str) and value in allowed  # a list or object is not hashable


def _native(source: str, holder: Mapping[str, Any], path: str) -> None:
    """A ``native`` record maps namespaces to the verbatim JSON objects a format keeps there."""
    if "native" not in holder:
        return
    native = _object(source, holder["native"], f"{path}.native")
    for namespace, value in native.items():
        where = f"{path}.native.{namespace}"
        problem = registry.native_problem(namespace, _object(source, value, where))
        if problem is not None:
            raise _reject(source, where + problem[0], problem[1])


def _earlier_held(source: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """What an export of an imported session held under its own marker (checked): held again,
    under the file's live params and settings (``hold_imported``)."""
    path = f"session.model_config.{IMPORTED_KEY}.{HELD_KEY}"
    marker = config.get(IMPORTED_KEY)
    earlier = marker.get(HELD_KEY) if isinstance(marker, dict) else None
    if earlier is None:
        return {}
    held = _object(source, earlier, path)
    params = _object(source, held.get("params", {}), f"{path}.params")
    settings = _object(source, held.get("settings", {}), f"{path}.settings")
    for api, values in settings.items():
        _object(source, values, f"{path}.settings.{api}")
    return {"params": params, "settings": settings}


def _list(source: str, holder: Mapping[str, Any], name: str, path: str) -> list[Any]:
    value = holder.get(name, [])
    if not isinstance(value, list):
        raise _reject(source, f"{path}.{name}", "must be a list")
    return value


def _origin(source: str, holder: Mapping[str, Any], path: str) -> None:
    if holder.get("origin") is None:
        return
    origin = _object(source, holder["origin"], f"{path}.origin")
    for name in ("api", "provider"):
        _text(source, origin, name, f"{path}.origin")
    for name in ("host", "model", "account", "region"):
        if name in origin:  # optional, but never null: route matching reads it as text
            _text(source, origin, name, f"{path}.origin")


def _message(source: str, raw: Any, path: str) -> Message:
    message = _object(source, raw, path)
    if not _one_of(message.get("role"), _ROLES):
        raise _reject(source, f"{path}.role", f"must be one of {', '.join(sorted(_ROLES))}, "
                      f"not {message.get('role')!r}"[:200])
    parts = _list(source, message, "parts", path)
    if "parts" not in message:
        raise _reject(source, f"{path}.parts", "is missing")
    for index, part in enumerate(parts):
        _part(source, part, f"{path}.parts[{index}]")
    _origin(source, message, path)
    for name in ("incomplete", "damaged"):
        _flag(source, message, name, path)
    _native(source, message, path)
    try:
        return message_from_json(message)
    except (KeyError, TypeError, ValueError) as exc:  # a shape the checks above missed
        raise _reject(source, path, f"does not describe a message ({exc!r})") from exc


def _part(source: str, raw: Any, path: str) -> None:
    part = _object(source, raw, path)
    tag = part.get("t")
    _native(source, part, path)
    if tag == "text":
        _text(source, part, "text", path)
    elif tag == "reasoning":
        _reasoning(source, part, path)
    elif tag == "tool_call":
        for name in ("id", "name", "arguments"):
            _text(source, part, name, path)
    elif tag == "tool_result":
        for name in ("call_id", "content"):
            _text(source, part, name, path)
        _flag(source, part, "is_error", path)
    elif tag == "opaque":
        native = _object(source, part.get("native"), f"{path}.native")
        if len(native) != 1:
            raise _reject(source, f"{path}.native", "must hold exactly one namespace")
        _origin(source, part, path)
    else:
        raise _reject(source, f"{path}.t", f"is not a known part type: {tag!r}"[:200])


def _reasoning(source: str, part: Mapping[str, Any], path: str) -> None:
    kind = part.get("kind")
    if not _one_of(kind, _KINDS):
        raise _reject(source, f"{path}.kind", f"must be one of {', '.join(sorted(_KINDS))}, "
                      f"not {kind!r}"[:200])
    for name in _OPTIONAL_TEXT:
        _text(source, part, name, path, required=False)
    _flag(source, part, "complete", path)
    _origin(source, part, path)
    # A signed part is only meaningful with its signature, a redacted one with its data: a plain
    # text part relabelled "signed" would later be replayed as if a provider had signed it.
    complete = part.get("complete", True)
    if kind == "signed" and complete and not part.get("signature"):
        raise _reject(source, f"{path}.signature", "is missing: a signed reasoning part "
                      "needs the signature it was received with")
    if kind == "redacted" and complete and not part.get("data"):
        raise _reject(source, f"{path}.data", "is missing: a redacted reasoning part needs "
                      "its data")
