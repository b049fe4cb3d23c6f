"""``thoughtline chat``: one-shot (-p / piped stdin) and interactive chat."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

import click

from thoughtline import config
from thoughtline.cli.common import console, home_dir, open_store
from thoughtline.errors import UsageError

# Presets tried, in order, when no provider is given and config.toml names none.
_AUTODETECT = ("openrouter", "deepseek", "openai", "kimi", "zai", "xai", "mistral", "groq",
               "gemini-openai")

NO_PROVIDER = (
    "No provider is configured and no API key was found. Give thoughtline a provider and its "
    "key, for example: export DEEPSEEK_API_KEY=sk-... and then thoughtline chat --provider "
    "deepseek. Each preset reads its own variable (OPENROUTER_API_KEY for openrouter, "
    "OPENAI_API_KEY for openai, ...; --api-key-env names another). To make one the default, "
    "add a [defaults] table with provider = \"deepseek\" to {config}. To try thoughtline "
    "offline: thoughtline chat --provider demo, or thoughtline demo."
)


INTERRUPTED = 130  # exit status of a one-shot stopped by Ctrl-C / SIGINT (128 + SIGINT)


def pick_provider(ctx: click.Context, provider_id: str | None, base_url: str | None,
                  model: str | None, key_env: str | None) -> config.ProviderConfig:
    """The provider for a new session: the flag, else config.toml's default, else a set key."""
    home = home_dir(ctx)
    cfg = config.load_config(home)
    wanted = provider_id or cfg.default_provider
    if not wanted:
        wanted = next((p for p in _AUTODETECT if config.presets()[p].api_key()), "")
    if not wanted:
        raise UsageError(NO_PROVIDER.format(config=home / "config.toml"))
    prov = config.provider(wanted, cfg, base_url=base_url,
                           model=model or (cfg.default_model if not provider_id else None),
                           key_env=key_env)
    if not prov.model:
        raise UsageError(f"provider {prov.id!r} has no default model: pass --model")
    return prov


def start_demo_backend(prov: config.ProviderConfig) -> tuple[config.ProviderConfig, Any]:
    """``--provider demo``: an emulated reasoning model on loopback, no key, no network."""
    from thoughtline.testing import ChatEmulator

    emulator = ChatEmulator("plain", require_auth=False)
    emulator.start()
    return replace(prov, base_url=emulator.base_url, key_env=""), emulator


def reply_json(session_id: str, done: Any) -> dict[str, Any]:
    """The one-shot ``--json`` object of design.md §3.2."""
    message = done.message
    usage = done.usage
    return {
        "session": session_id,
        "reply": {
            "text": message.text,
            "reasoning": message.reasoning_text(),
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                           for c in message.tool_calls],
        },
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                  "reasoning_tokens": usage.reasoning_tokens,
                  "cached_tokens": usage.cached_tokens},
    }


@click.command()
@click.argument("prompt", required=False)
@click.option("--provider", "provider_id", help="Preset id or a provider named in config.toml "
              "('demo' chats offline with a built-in emulator).")
@click.option("--base-url", help="Override the provider's base URL (the provider id is kept).")
@click.option("--model", help="Model id (default: the provider's default model).")
@click.option("--api-key-env", "key_env", metavar="VAR",
              help="Read the API key from this environment variable.")
@click.option("-r", "--resume", "resume", is_flag=False, flag_value="", default=None,
              metavar="[SESSION]", help="Continue a session by id, unique prefix or title; "
              "alone, the latest.")
@click.option("-c", "--continue", "cont", is_flag=True, help="Continue the latest session.")
@click.option("-p", "--prompt", "prompt_opt", metavar="TEXT", help="Send one turn and exit.")
@click.option("--json", "as_json", is_flag=True, help="One-shot: print one JSON object.")
@click.option("--no-stream", is_flag=True, help="Wait for the whole answer instead of streaming.")
@click.option("--show-reasoning/--hide-reasoning", default=True,
              help="Show the model's reasoning (dimmed).")
@click.option("--title", help="Title for a new session.")
@click.pass_context
def chat(ctx: click.Context, prompt: str | None, provider_id: str | None, base_url: str | None,
         model: str | None, key_env: str | None, resume: str | None, cont: bool,
         prompt_opt: str | None, as_json: bool, no_stream: bool, show_reasoning: bool,
         title: str | None) -> None:
    """Chat with a reasoning model; its reasoning is kept and replayed per route.

    \b
    Examples:
      thoughtline chat --provider deepseek
      thoughtline chat --provider deepseek -p "why is the sky blue?" --json
      echo "summarize this" | thoughtline chat --provider openrouter
      thoughtline chat -c -p "and then?"          # continue the latest session
      thoughtline chat -r 3f2a -p "again"          # continue a session by id prefix
      thoughtline chat --provider demo             # offline, emulated model

    Long sessions compact automatically before a request above [compaction] threshold (default
    0.8) × the model's context window (context_window = N on [providers.NAME] overrides it);
    /compact [N] compacts now. Kept turns keep their reasoning exactly.
    """
    text = prompt_opt or prompt
    if text is None and not sys.stdin.isatty():
        text = sys.stdin.read().strip() or None
    if as_json and text is None:
        raise click.UsageError("--json needs a prompt (-p TEXT, an argument or piped stdin)")
    # A new session's provider is settled before the HTTP and session machinery loads, so a
    # missing provider or key fails at once.
    resuming = resume is not None or cont
    prov = None if resuming else pick_provider(ctx, provider_id, base_url, model, key_env)
    from thoughtline.cli.turns import ChatRunner

    store = open_store(ctx)
    runner = ChatRunner(ctx=ctx, store=store, stream=not no_stream,
                        show_reasoning=show_reasoning, out=console(), err=console(stderr=True))
    try:
        if prov is None:
            runner.resume(resume or None, provider_id=provider_id, base_url=base_url,
                          model=model, key_env=key_env)
        else:
            runner.create(prov, title=title or (text or "")[:60])
        if text is not None:
            done = runner.one_shot(text, as_json=as_json)
            if done is None:  # interrupted: the session is kept, but this is not a success
                raise SystemExit(INTERRUPTED)
            if as_json:
                click.echo(json.dumps(reply_json(runner.session.id, done), ensure_ascii=False))
            return
        from thoughtline.cli.interactive import run_interactive

        run_interactive(runner)
    finally:
        runner.close()
        store.close()
