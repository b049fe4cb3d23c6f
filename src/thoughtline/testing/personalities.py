"""The chat emulator's personalities: one small data record per emulated provider.

Owns which provider behaviours a personality combines: the response shape its reasoning takes,
the must-echo rule it enforces, the strict schema it validates against, and the models it lists.
Does not own the behaviours themselves (``replies`` builds shapes, ``rejections`` enforces rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from thoughtline.testing.script import CallIdStyle

ReplyShape = Literal[
    "reasoning_content",  # DeepSeek/Kimi/MiMo/llama.cpp: message.reasoning_content
    "reasoning",  # Groq/Cerebras/vLLM/Ollama: message.reasoning
    "mistral",  # Mistral: content list with a "thinking" chunk
    "openrouter",  # OpenRouter: reasoning + reasoning_details (signed/encrypted items)
    "gemini",  # Gemini OpenAI-compat: extra_content.google.thought_signature
    "copilot",  # GitHub Copilot: reasoning_text + reasoning_opaque
]
EchoRule = Literal["deepseek", "kimi"]
StrictRule = Literal["mistral", "groq", "cerebras"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Personality:
    """What one emulated provider returns and enforces.

    ``shape`` also selects the signed carriers verified on the way back in (OpenRouter
    ``reasoning_details``, Gemini thought signatures, Copilot opaque blobs).
    """

    name: str
    shape: ReplyShape
    models: tuple[str, ...]
    echo: EchoRule | None = None
    strict: StrictRule | None = None
    call_id_style: CallIdStyle = "openai"


def _table(*items: Personality) -> Mapping[str, Personality]:
    return MappingProxyType({p.name: p for p in items})


PERSONALITIES: Mapping[str, Personality] = _table(
    Personality(
        name="deepseek",
        shape="reasoning_content",
        models=("deepseek-reasoner", "deepseek-chat", "deepseek-v4-pro"),
        echo="deepseek",
    ),
    Personality(
        name="kimi",
        shape="reasoning_content",
        models=("kimi-k2-thinking", "kimi-k2.6"),
        echo="kimi",
    ),
    Personality(name="mimo", shape="reasoning_content", models=("mimo-v2-flash",), echo="deepseek"),
    Personality(
        name="mistral",
        shape="mistral",
        models=("magistral-medium-latest", "mistral-large-latest"),
        strict="mistral",
        call_id_style="mistral",
    ),
    Personality(
        name="groq",
        shape="reasoning",
        models=("openai/gpt-oss-120b", "qwen/qwen3-32b"),
        strict="groq",
    ),
    Personality(
        name="cerebras", shape="reasoning", models=("gpt-oss-120b", "qwen-3-32b"), strict="cerebras"
    ),
    # Strict like Groq, but answers with reasoning_content so a client *will* try to replay it.
    Personality(
        name="strict-custom", shape="reasoning_content", models=("strict-reasoner",), strict="groq"
    ),
    Personality(
        name="openrouter",
        shape="openrouter",
        models=(
            "anthropic/claude-sonnet-4.5",
            "openai/gpt-5",
            "google/gemini-3-pro-preview",
            "deepseek/deepseek-r1",
        ),
    ),
    Personality(
        name="gemini-openai", shape="gemini", models=("gemini-3-pro-preview", "gemini-2.5-pro")
    ),
    Personality(name="copilot", shape="copilot", models=("claude-sonnet-4.5", "gpt-5")),
    Personality(name="plain", shape="reasoning_content", models=("demo-reasoner",)),
    Personality(name="local", shape="reasoning", models=("local-reasoner",)),
)
"""Every personality by name (what ``ChatEmulator("name")`` and the CLI accept)."""
