"""The native-API emulators as the demo uses them: how to start each, and what it was sent back.

Owns, per API, the emulator to start for a demo scenario, the base URL a preset's ``--base-url``
points at, and how to read the assistant items a recorded request replayed (Anthropic and Bedrock
``messages`` of role assistant, Gemini ``contents`` of role model, Responses ``input`` items and
Interactions ``input`` steps the model produced). Emulators read requests as the provider does;
nothing here imports a codec.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson

#: Offline demo credentials for botocore's SigV4 (nothing leaves loopback; never a real key).
DEMO_AWS_ENV: Mapping[str, str] = {
    "AWS_ACCESS_KEY_ID": "AKIADEMOEMULATOR0000",
    "AWS_SECRET_ACCESS_KEY": "demo/emulator/secret/not/a/real/key0000",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class NativeBackend:
    """One emulated native-API route: its emulator, the URL a preset is pointed at, its items."""

    start: Callable[[], Any]
    base_url: Callable[[Any], str]
    assistant_items: Callable[[Any], list[Any]]


def _role_items(key: str, role: str) -> Callable[[Any], list[Any]]:
    def items(body: Any) -> list[Any]:
        entries = body.get(key, ()) if isinstance(body, Mapping) else ()
        return [m for m in entries if isinstance(m, Mapping) and m.get("role") == role]
    return items


def _responses_items(body: Any) -> list[Any]:
    # What the model produced and is sent back: reasoning items, calls, assistant messages.
    entries = body.get("input", ()) if isinstance(body, Mapping) else ()
    return [i for i in entries if isinstance(i, Mapping) and (
        i.get("type") in ("reasoning", "function_call") or i.get("role") == "assistant")]


def _anthropic() -> Any:
    from thoughtline.testing.anthropic_emulator import AnthropicEmulator

    return AnthropicEmulator(require_auth=False).start()


def _gemini() -> Any:
    from thoughtline.testing.gemini_emulator import GeminiEmulator

    return GeminiEmulator(require_auth=False).start()


def _bedrock() -> Any:
    from thoughtline.testing.bedrock_emulator import BedrockEmulator

    return BedrockEmulator(region=DEMO_AWS_ENV["AWS_REGION"]).start()


def _interactions() -> Any:
    from thoughtline.testing.interactions_emulator import InteractionsEmulator

    return InteractionsEmulator(require_auth=False).start()


def _model_steps(body: Any) -> list[Any]:
    # Interactions ``input`` steps the model produced: thoughts, outputs, calls.
    entries = body.get("input", ()) if isinstance(body, Mapping) else ()
    return [s for s in entries if isinstance(s, Mapping) and s.get("type") in (
        "thought", "model_output", "function_call")]


def _responses() -> Any:
    from thoughtline.testing.responses_emulator import ResponsesEmulator

    return ResponsesEmulator("openai", require_auth=False).start()


BACKENDS: Mapping[str, NativeBackend] = {
    "anthropic": NativeBackend(start=_anthropic, base_url=lambda e: e.base_url,
                               assistant_items=_role_items("messages", "assistant")),
    "gemini": NativeBackend(start=_gemini, base_url=lambda e: e.base_url,
                            assistant_items=_role_items("contents", "model")),
    "bedrock": NativeBackend(start=_bedrock, base_url=lambda e: e.endpoint_url,
                             assistant_items=_role_items("messages", "assistant")),
    "openai-responses": NativeBackend(start=_responses, base_url=lambda e: e.base_url,
                                      assistant_items=_responses_items),
    "gemini-interactions": NativeBackend(start=_interactions, base_url=lambda e: e.base_url,
                                         assistant_items=_model_steps),
}


#: What the demo counts on replayed assistant items, per API: block/item types and field names.
_WATCH: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "anthropic": (("thinking", "redacted_thinking"), ("signature",)),
    "gemini": ((), ("thought", "thoughtSignature")),
    "bedrock": ((), ("reasoningText", "redactedContent", "signature")),
    "openai-responses": (("reasoning",), ("encrypted_content", "phase")),
    "gemini-interactions": (("thought",), ("signature",)),
}


def describe(api: str, body: Any) -> str:
    """What the assistant items of a request carried, e.g. ``thinking ×2, signature ×2``."""
    types, keys = _WATCH[api]
    counts: dict[str, int] = {}

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            kind = value.get("type")
            if kind in types:
                counts[kind] = counts.get(kind, 0) + 1
            for key, inner in value.items():
                if key in keys:
                    counts[key] = counts.get(key, 0) + 1
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(BACKENDS[api].assistant_items(body or {}))
    return ", ".join(f"{name} ×{n}" for name, n in counts.items()) or "nothing"


def replayed(api: str, body: Any) -> list[bytes]:
    """The assistant items of a recorded request, as exact bytes (key order kept)."""
    return [orjson.dumps(item) for item in BACKENDS[api].assistant_items(body or {})]


@contextmanager
def demo_credentials() -> Iterator[None]:
    """Fake AWS credentials for the duration of a demo (restored afterwards)."""
    saved = {name: os.environ.get(name) for name in (*DEMO_AWS_ENV, "AWS_PROFILE",
                                                      "AWS_SESSION_TOKEN")}
    os.environ.update(DEMO_AWS_ENV)
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
