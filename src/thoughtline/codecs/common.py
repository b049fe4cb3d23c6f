"""Small JSON helpers more than one codec needs (no wire knowledge of any API)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Merge ``extra`` into ``base`` in place, objects key by key (copied, never shared)."""
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merged = dict(base[key])
            deep_merge(merged, value)
            base[key] = merged
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value
