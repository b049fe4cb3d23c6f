"""``thoughtline demo``: the whole job, offline, on the built-in route emulators.

Runs a scripted tool-calling conversation against several route personalities, resumes every
session in a fresh process, and prints what each route received and whether every request was
accepted — checked from the emulators' own records, not from our code.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from thoughtline.cli.common import console

TOOL_NAME = "lookup_weather"


@dataclass(frozen=True, kw_only=True, slots=True)
class Scenario:
    label: str
    personality: str
    provider: str
    model: str
    rejections: int = 0  # requests the route is expected to reject (the fallback learns once)
    api: str = "openai-chat"  # a native API's scenarios run on its own emulator (testing.native)


SCENARIOS = (
    Scenario(label="deepseek (must-echo)", personality="deepseek", provider="deepseek",
             model="deepseek-reasoner"),
    Scenario(label="kimi (must-echo, keep)", personality="kimi", provider="kimi",
             model="kimi-k2.6"),
    Scenario(label="mistral (strict)", personality="mistral", provider="mistral",
             model="magistral-medium-latest"),
    Scenario(label="cerebras (reasoning only)", personality="cerebras", provider="cerebras",
             model="gpt-oss-120b"),
    Scenario(label="openrouter claude (signed)", personality="openrouter",
             provider="openrouter", model="anthropic/claude-sonnet-4.5"),
    Scenario(label="openrouter gpt-5 (encrypted)", personality="openrouter",
             provider="openrouter", model="openai/gpt-5"),
    Scenario(label="gemini compat (signatures)", personality="gemini-openai",
             provider="gemini-openai", model="gemini-3-pro-preview"),
    Scenario(label="copilot (opaque)", personality="copilot", provider="copilot",
             model="claude-sonnet-4.5"),
    Scenario(label="unlisted strict relay", personality="strict-custom",
             provider="custom", model="relay-reasoner", rejections=1),
    Scenario(label="anthropic (signed thinking)", personality="", api="anthropic",
             provider="anthropic", model="claude-opus-4-5"),
    Scenario(label="gemini (thought signatures)", personality="", api="gemini",
             provider="gemini", model="gemini-3-pro-preview"),
    Scenario(label="bedrock claude (SigV4)", personality="", api="bedrock",
             provider="bedrock", model="us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    Scenario(label="openai responses (encrypted)", personality="", api="openai-responses",
             provider="openai-responses", model="gpt-5.5"),
    Scenario(label="gemini interactions (thought steps)", personality="",
             api="gemini-interactions", provider="gemini-interactions-stateless",
             model="gemini-3-pro-preview"),
)

_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
            "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
            "eighteen", "nineteen", "twenty")
_API_NAMES = {"openai-chat": "Chat Completions", "anthropic": "Anthropic", "gemini": "Gemini",
              "bedrock": "Bedrock", "openai-responses": "Responses",
              "gemini-interactions": "Gemini Interactions"}


def in_words(count: int) -> str:
    return _NUMBERS[count] if 0 <= count < len(_NUMBERS) else str(count)


def routes_counted() -> str:
    """How many routes the demo runs, in words, and on which APIs: "fourteen emulated routes
    (Chat Completions, ...)", from ``SCENARIOS`` so the help cannot miscount them."""
    apis = ", ".join(dict.fromkeys(_API_NAMES.get(s.api, s.api) for s in SCENARIOS))
    return f"{in_words(len(SCENARIOS))} emulated routes ({apis})"


QUESTIONS = ("What's the weather in Florence?", "And in Rome?")
RESUME_QUESTION = "Which city was warmer?"


def _tool() -> Any:
    from thoughtline.messages import ToolSpec

    return ToolSpec(name=TOOL_NAME, description="Current weather for a city.",
                    parameters={"type": "object", "properties": {"query": {"type": "string"}}})


async def _conversation(session: Any, questions: tuple[str, ...]) -> None:
    """Each question, then answer every tool call with a canned result until the model stops."""
    from thoughtline.messages import ToolResult

    for question in questions:
        done = await session.send(question)
        for _ in range(4):
            calls = done.message.tool_calls
            if not calls:
                break
            done = await session.send([ToolResult(call_id=c.id, content="22 °C, clear sky")
                                       for c in calls])


def _adding(mark: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """A model-config update that adds ``mark``'s keys to the stored config."""
    return lambda stored: {**stored, **mark}


async def _first_phase(home: Path, emulators: dict[str, Any]) -> dict[str, str]:
    from thoughtline.modelconfig import DEMO_KEY
    from thoughtline.requestlog import RequestLog
    from thoughtline.session import Session
    from thoughtline.store import open_store

    out = console()
    store = open_store(None, home)
    ids: dict[str, str] = {}
    try:
        for scenario in SCENARIOS:
            emulator = emulators[scenario.label]
            provider = _provider(scenario, emulator)
            session = Session.create(store, provider, title=f"demo: {scenario.label}",
                                     tools=[_tool()], log=RequestLog(home / "logs"))
            mark = {DEMO_KEY: {"scenario": scenario.label}}  # chat -r restarts its emulator
            store.update_model_config(session.id, _adding(mark))
            try:
                await _conversation(session, QUESTIONS)
            finally:
                await session.aclose()
            ids[scenario.label] = session.id
            out.print(f"  ✓ {scenario.label}: {len(emulator.received)} requests, "
                      f"{session.turns} turns stored", markup=False)
    finally:
        store.close()
    return ids


def _provider(scenario: Scenario, emulator: Any) -> Any:
    """The scenario's preset aimed at its emulator (``--base-url``), with no key variable."""
    from dataclasses import replace

    from thoughtline import config
    from thoughtline.config import ProviderConfig

    if scenario.api == "openai-chat":
        return ProviderConfig(id=scenario.provider, base_url=emulator.base_url,
                              model=scenario.model, key_env="")
    from thoughtline.testing.native import BACKENDS

    preset = config.provider(scenario.provider, model=scenario.model,
                             base_url=BACKENDS[scenario.api].base_url(emulator))
    return replace(preset, key_env="")


def resume_backend(prov: Any, model_config: Mapping[str, Any], cleanup: ExitStack) -> Any:
    """The provider a demo session resumes on: its scenario's emulator, started afresh (the one
    the demo ran is gone), with no key. ``None`` for a session the demo did not make. The
    emulator (and, for Bedrock, the demo's fake AWS credentials) last until ``cleanup`` closes."""
    from dataclasses import replace

    from thoughtline.modelconfig import DEMO_KEY
    from thoughtline.testing.native import demo_credentials

    mark = model_config.get(DEMO_KEY)
    label = mark.get("scenario") if isinstance(mark, Mapping) else None
    scenario = next((s for s in SCENARIOS if s.label == label), None)
    if scenario is None or scenario.provider != prov.id:
        return None
    if scenario.api == "bedrock":  # SigV4 signs with the demo's fake keys, never yours
        cleanup.enter_context(demo_credentials())
    emulator = _start(scenario)
    cleanup.callback(emulator.stop)
    started = _provider(scenario, emulator)
    return replace(prov, base_url=started.base_url, key_env="")


def emulated_provider(prov: Any, model_config: Mapping[str, Any], cleanup: ExitStack) -> Any:
    """The provider a stored session is answered by when an emulator stands in for its route:
    a ``--provider demo`` session's model, or a ``thoughtline demo`` session's scenario (as
    ``resume_backend``), started now until ``cleanup`` closes. ``None`` for any other session,
    and for an imported one whose provider was not trusted."""
    from thoughtline.config import DEMO_PROVIDER
    from thoughtline.modelconfig import provider_untrusted

    if prov.id == DEMO_PROVIDER:
        started, emulator = start_demo_backend(prov)
        cleanup.callback(emulator.stop)
        return started
    if provider_untrusted(model_config):
        return None
    return resume_backend(prov, model_config, cleanup)


def _start(scenario: Scenario) -> Any:
    if scenario.api == "openai-chat":
        from thoughtline.testing import ChatEmulator

        return ChatEmulator(scenario.personality, require_auth=False).start()
    from thoughtline.testing.native import BACKENDS

    return BACKENDS[scenario.api].start()


async def _resume_phase(home: Path, ids: list[str]) -> None:
    from thoughtline.requestlog import RequestLog
    from thoughtline.session import Session
    from thoughtline.store import open_store

    store = open_store(None, home)
    try:
        for session_id in ids:
            session = Session.resume(store, session_id, log=RequestLog(home / "logs"))
            try:
                await _conversation(session, (RESUME_QUESTION,))
            finally:
                await session.aclose()
    finally:
        store.close()


def _assistant_turns(received: Any) -> list[bytes]:
    import orjson

    body = received.body or {}
    return [orjson.dumps(m, option=orjson.OPT_SORT_KEYS) for m in body.get("messages", ())
            if m.get("role") == "assistant"]


def _already_learned(home: Path) -> set[tuple[str, str]]:
    """(provider, model) pairs the home's verdict ledger already holds: a demo run again in the
    same home is not rejected there again — the fallback learned once, which is the point."""
    from thoughtline.store import STATE_DB, open_store

    if not (home / STATE_DB).exists():
        return set()
    store = open_store(None, home)
    try:
        return {(v.provider, v.model) for v in store.verdicts()}
    finally:
        store.close()


def _row(scenario: Scenario, emulator: Any, before: int,
         learned: set[tuple[str, str]]) -> dict[str, Any]:
    """What the emulator saw: statuses, carriers per assistant turn, and the restart check."""
    from thoughtline.codecs.registry import resolve
    from thoughtline.testing.records import assistant_fields

    received = list(emulator.received)
    accepted = sum(1 for r in received if r.status == 200)
    rejected = [r.status for r in received if r.status != 200]
    last_before, first_after = received[before - 1], received[before]
    if scenario.api == "openai-chat":
        turns: Any = _assistant_turns
        fields = assistant_fields(received).label()
    else:
        from thoughtline.testing import native

        def turns(r: Any) -> list[bytes]:
            return native.replayed(scenario.api, r.body)

        fields = native.describe(scenario.api, last_before.body)
    replayed = turns(first_after)[: len(turns(last_before))]
    identical = replayed == turns(last_before)
    provider = _provider(scenario, emulator)
    route = resolve(scenario.api, provider.route_id, provider.base_url, scenario.model)
    return {"label": scenario.label, "route": route.row, "requests": len(received),
            "accepted": accepted, "rejected": rejected, "fields": fields,
            "restart_identical": identical,
            "as_expected": identical and len(rejected) == (
                0 if (scenario.provider, scenario.model) in learned else scenario.rejections)}


def _table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title="What each route received (from the emulators' own records)")
    for column in ("route", "row", "requests", "on assistant turns", "restart"):
        table.add_column(column, overflow="fold")
    for row in rows:
        status = f"{row['accepted']}/{row['requests']} ok"
        if row["rejected"]:
            status += f", {len(row['rejected'])} rejected → learned"
        table.add_row(row["label"], row["route"], status, row["fields"],
                      "identical" if row["restart_identical"] else "CHANGED")
    return table


@click.command(help=f"""Offline walkthrough: a tool-calling conversation on {routes_counted()},
    resumed in a fresh process, with a table of what each route received.

    Nothing touches the network or your sessions: state goes to a temporary directory, or to
    the home given before the command (thoughtline --home DIR demo), which is then kept.
    """)
@click.option("--keep", is_flag=True, help="Keep the demo's state directory and print it.")
@click.option("--resume-sessions", hidden=True, help="(internal) second-process phase.")
@click.pass_context
def demo(ctx: click.Context, keep: bool, resume_sessions: str | None) -> None:
    root = ctx.find_root().obj or {}
    if resume_sessions is not None:
        asyncio.run(_resume_phase(Path(root["home"]), resume_sessions.split(",")))
        return
    from thoughtline.testing.native import demo_credentials

    home = Path(root.get("home") or tempfile.mkdtemp(prefix="thoughtline-demo-"))
    learned = _already_learned(home)
    out = console(plain_width=120)
    with demo_credentials():
        _run(ctx, home, out, keep, learned)


def _run(ctx: click.Context, home: Path, out: Any, keep: bool,
         learned: set[tuple[str, str]]) -> None:
    root = ctx.find_root().obj or {}
    emulators = {s.label: _start(s) for s in SCENARIOS}
    try:
        out.print("thoughtline demo — a tool-calling conversation on each route "
                  "(2 questions, each with a tool call)", style="bold", markup=False)
        ids = asyncio.run(_first_phase(home, emulators))
        before = {label: len(e.received) for label, e in emulators.items()}
        out.print("  … resuming every session in a fresh process", markup=False)
        subprocess.run([sys.executable, "-m", "thoughtline.cli.main", "--home", str(home),
                        "demo", "--resume-sessions", ",".join(ids.values())], check=True)
        rows = [_row(s, emulators[s.label], before[s.label], learned) for s in SCENARIOS]
    finally:
        for emulator in emulators.values():
            emulator.stop()
    out.print(_table(rows))
    from thoughtline.testing.records import LEGEND

    out.print(LEGEND, style="dim", markup=False)
    ok = all(r["as_expected"] for r in rows)
    out.print(f"{sum(r['requests'] for r in rows)} requests, "
              f"{sum(len(r['rejected']) for r in rows)} rejected (expected: "
              f"{'none: this home had already learned' if learned else 'the one the fallback'}"
              f" {'from it' if learned else 'learns from'}); every session resumed in a fresh "
              "process with its "
              f"reasoning replayed byte-identical: {'yes' if ok else 'NO'}", markup=False)
    if keep or root.get("home"):
        out.print(f"state kept in {home} (try: thoughtline --home {home} sessions list; "
                  f"chat -r ID resumes one on a freshly started emulator)", markup=False)
    else:
        shutil.rmtree(home, ignore_errors=True)
    if not ok:
        raise SystemExit(1)


def start_demo_backend(prov: Any) -> tuple[Any, Any]:
    """``--provider demo``: an emulated reasoning model on loopback, no key, no network."""
    from dataclasses import replace

    from thoughtline.testing import ChatEmulator

    emulator = ChatEmulator("plain", require_auth=False)
    emulator.start()
    return replace(prov, base_url=emulator.base_url, key_env=""), emulator
