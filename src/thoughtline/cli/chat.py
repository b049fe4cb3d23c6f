"""``thoughtline chat``: one-shot (-p / piped stdin) and interactive chat."""

from __future__ import annotations

import json
import signal
import sys
from typing import Any

import click

from thoughtline import config
from thoughtline.cli.common import console, home_dir, open_store, require_key_for
from thoughtline.errors import UsageError
from thoughtline.termsafe import safe_line

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


EMPTY_STDIN = (
    "standard input was empty: there is nothing to send. Pipe the text to send (echo hi | "
    "thoughtline chat), pass it with -p TEXT, or run thoughtline chat on a terminal to chat "
    "interactively."
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
    require_key_for(prov)
    return prov


def reply_json(session_id: str, done: Any) -> dict[str, Any]:
    """The one-shot ``--json`` object (docs/cli.md)."""
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


def _piped_text() -> str | None:
    """Standard input's text, stripped ("" when it was empty or only whitespace); ``None`` on a
    terminal. Text that is not UTF-8 is a usage error."""
    if sys.stdin.isatty():
        return None
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise UsageError(f"standard input is not UTF-8 text (undecodable byte at offset "
                         f"{exc.start}); convert it first, e.g. with iconv") from exc


def _prompt_text(piped: str | None, given: str | None, title: str | None) -> str | None:
    """The one-shot prompt: piped stdin, then the prompt given (both are sent, stdin first,
    like ``cat log | llm "explain"``), or either alone."""
    for name, value in (("the prompt", given), ("--title", title)):
        if value is not None and _undecodable(value):
            raise UsageError(f"{name} is not valid UTF-8 text (check the terminal's or the "
                             "shell's encoding)")
    if piped and given:
        return f"{piped}\n\n{given}"
    return piped or given


def _undecodable(text: str) -> bool:
    """Command-line bytes that were not UTF-8 arrive as lone surrogates (``surrogateescape``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _one_shot(runner: Any, text: str, as_json: bool) -> Any:
    """Send the one-shot turn; with ``--json`` a failure still prints one object."""
    from thoughtline.errors import ThoughtlineError

    try:
        return runner.one_shot(text, as_json=as_json)
    except ThoughtlineError as exc:
        if as_json:
            session = runner.kept_session_id
            click.echo(json.dumps({"session": session, "error": {
                "message": str(exc), "type": type(exc).__name__,
                "status": getattr(exc, "status", None)}}, ensure_ascii=False))
        raise


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
@click.option("--show-reasoning/--hide-reasoning", default=None,
              help="Show the model's reasoning, dimmed (the default). A one-shot whose output "
              "is not a terminal writes it to stderr, so stdout is the answer only; "
              "--show-reasoning writes it to stdout there too.")
@click.option("--title", help="Title for a new session.")
@click.option("--trust-provider", is_flag=True,
              help="Resuming an imported session: use the base URL, key variable, request "
                   "params and settings its file names instead of your preset's or "
                   "config.toml's.")
@click.pass_context
def chat(ctx: click.Context, prompt: str | None, provider_id: str | None, base_url: str | None,
         model: str | None, key_env: str | None, resume: str | None, cont: bool,
         prompt_opt: str | None, as_json: bool, no_stream: bool, show_reasoning: bool | None,
         title: str | None, trust_provider: bool) -> None:
    """Chat with a reasoning model; its reasoning is kept and replayed per route.

    \b
    Examples:
      thoughtline chat --provider deepseek
      thoughtline chat --provider deepseek -p "why is the sky blue?" --json
      echo "summarize this" | thoughtline chat --provider openrouter
      cat build.log | thoughtline chat -p "explain"  # piped text, then the prompt
      thoughtline chat -c -p "and then?"          # continue the latest session
      thoughtline chat -r 3f2a -p "again"          # continue a session by id prefix
      thoughtline chat --provider demo             # offline, emulated model
      thoughtline chat -p "hi" > answer.txt        # the answer only; reasoning on stderr

    Long sessions compact automatically before a request above [compaction] threshold (default
    0.8) × the model's context window (context_window = N on [providers.NAME] overrides it);
    /compact [N] compacts now. Kept turns keep their reasoning exactly.
    """
    if cont and resume:
        raise click.UsageError(f"-c/--continue (the latest session) and -r/--resume "
                               f"{safe_line(resume)} (that session) contradict each other: "
                               "pass one of them")
    piped = _piped_text()
    text = _prompt_text(piped or None, prompt_opt or prompt, title)
    if as_json and text is None:
        raise click.UsageError("--json needs a prompt (-p TEXT, an argument or piped stdin)")
    # A new session's provider is settled before the HTTP and session machinery loads, so a
    # missing provider or key fails at once.
    resuming = resume is not None or cont
    prov = None if resuming else pick_provider(ctx, provider_id, base_url, model, key_env)
    if text is None and piped == "":
        raise UsageError(EMPTY_STDIN)
    from thoughtline.cli.turns import TERMINATED, ChatRunner, terminate_gracefully

    terminate_gracefully()
    store = open_store(ctx)
    out, err = console(), console(stderr=True)
    runner = ChatRunner(ctx=ctx, store=store, stream=not no_stream,
                        show_reasoning=show_reasoning is not False, out=out, err=err)
    if show_reasoning is None and text is not None and not sys.stdout.isatty():
        runner.thoughts = err  # piped one-shot output is the answer only, as `llm` does
    try:
        if prov is None:
            runner.resume(resume or None, provider_id=provider_id, base_url=base_url,
                          model=model, key_env=key_env, trust_provider=trust_provider)
        else:
            runner.create(prov, title=title or (text or "")[:60])
        if text is not None:
            done = _one_shot(runner, text, as_json)
            if done is None:  # interrupted: the session is kept, but this is not a success
                raise SystemExit(TERMINATED if runner.stopped_by == signal.SIGTERM
                                 else INTERRUPTED)
            if as_json:
                click.echo(json.dumps(reply_json(runner.session.id, done), ensure_ascii=False))
            return
        from thoughtline.cli.interactive import run_interactive

        run_interactive(runner)
        if runner.stopped_by == signal.SIGTERM:
            raise SystemExit(TERMINATED)
    finally:
        runner.close()
        store.close()
