"""thoughtline: keep a reasoning model's line of thought across turns, resumes and branches.

The curated public API. Names load on first use (PEP 562), so ``import thoughtline.cli`` and
``thoughtline --help`` stay fast; ``from thoughtline import Session`` works as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AutoCompaction": "thoughtline.compaction",
    "CompactionResult": "thoughtline.compaction",
    "CompactionSettings": "thoughtline.compaction",
    "ConfigError": "thoughtline.errors",
    "CorruptPayload": "thoughtline.errors",
    "Done": "thoughtline.events",
    "Message": "thoughtline.messages",
    "NotFound": "thoughtline.errors",
    "Notice": "thoughtline.events",
    "Origin": "thoughtline.messages",
    "ProtocolError": "thoughtline.errors",
    "ProviderConfig": "thoughtline.config",
    "ProviderError": "thoughtline.errors",
    "Reasoning": "thoughtline.messages",
    "ReasoningDelta": "thoughtline.events",
    "ReplayPlan": "thoughtline.replay",
    "Route": "thoughtline.routes",
    "Session": "thoughtline.session",
    "StoreError": "thoughtline.errors",
    "StreamInterrupted": "thoughtline.errors",
    "Text": "thoughtline.messages",
    "TextDelta": "thoughtline.events",
    "ThoughtlineError": "thoughtline.errors",
    "ToolCall": "thoughtline.messages",
    "ToolCallStarted": "thoughtline.events",
    "ToolResult": "thoughtline.messages",
    "ToolSpec": "thoughtline.messages",
    "TurnOptions": "thoughtline.session",
    "Usage": "thoughtline.messages",
    "UsageError": "thoughtline.errors",
    "Verdict": "thoughtline.verdicts",
    "compress": "thoughtline.compaction",
    "open_store": "thoughtline.store",
    "resolve": "thoughtline.codecs.registry",
}

__all__ = [
    "AutoCompaction",
    "CompactionResult",
    "CompactionSettings",
    "ConfigError",
    "CorruptPayload",
    "Done",
    "Message",
    "NotFound",
    "Notice",
    "Origin",
    "ProtocolError",
    "ProviderConfig",
    "ProviderError",
    "Reasoning",
    "ReasoningDelta",
    "ReplayPlan",
    "Route",
    "Session",
    "StoreError",
    "StreamInterrupted",
    "Text",
    "TextDelta",
    "ThoughtlineError",
    "ToolCall",
    "ToolCallStarted",
    "ToolResult",
    "ToolSpec",
    "TurnOptions",
    "Usage",
    "UsageError",
    "Verdict",
    "compress",
    "open_store",
    "resolve",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'thoughtline' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from thoughtline.codecs.registry import resolve
    from thoughtline.compaction import (
        AutoCompaction,
        CompactionResult,
        CompactionSettings,
        compress,
    )
    from thoughtline.config import ProviderConfig
    from thoughtline.errors import (
        ConfigError,
        CorruptPayload,
        NotFound,
        ProtocolError,
        ProviderError,
        StoreError,
        StreamInterrupted,
        ThoughtlineError,
        UsageError,
    )
    from thoughtline.events import Done, Notice, ReasoningDelta, TextDelta, ToolCallStarted
    from thoughtline.messages import (
        Message,
        Origin,
        Reasoning,
        Text,
        ToolCall,
        ToolResult,
        ToolSpec,
        Usage,
    )
    from thoughtline.replay import ReplayPlan
    from thoughtline.routes import Route
    from thoughtline.session import Session, TurnOptions
    from thoughtline.store import open_store
    from thoughtline.verdicts import Verdict
