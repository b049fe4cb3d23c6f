"""Running chat turns from the CLI: one event loop, one session, streamed rendering, Ctrl-C.

Owns the glue between the click command / interactive loop and ``Session``: creating or resuming
the session (starting the demo emulator when asked), streaming events to the terminal, and
turning an interrupt into "stop this answer, keep the session".
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from thoughtline import config
from thoughtline.events import Done, Notice, ReasoningDelta, TextDelta, ToolCallStarted
from thoughtline.requestlog import RequestLog
from thoughtline.session import Session, TurnOptions
from thoughtline.termsafe import safe, safe_line

if TYPE_CHECKING:
    from rich.console import Console

    from thoughtline.compaction import AutoCompaction
    from thoughtline.store.base import Store


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
TERMINATED = 128 + signal.SIGTERM  # exit status after SIGTERM


class Terminated(SystemExit):
    """SIGTERM outside a turn: unwind (closing the store, removing an empty new session)."""

    def __init__(self) -> None:
        super().__init__(TERMINATED)


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def terminate_gracefully() -> None:
    """SIGTERM raises ``Terminated`` (in the main thread), so ``finally`` blocks run."""
    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGTERM, _raise_terminated)


class ChatRunner:
    def __init__(self, *, ctx: click.Context, store: Store, stream: bool, show_reasoning: bool,
                 out: Console, err: Console) -> None:
        from thoughtline.cli.common import home_dir

        self.ctx = ctx
        self.store = store
        self.home = home_dir(ctx)
        self.stream = stream
        self.show_reasoning = show_reasoning
        self.out = out
        self.err = err
        self.thoughts = out  # where shown reasoning goes (stderr for a piped one-shot)
        self.loop = asyncio.new_event_loop()
        self.emulator: Any = None
        self._cleanup = contextlib.ExitStack()  # what a resumed demo session started
        self._session: Session | None = None
        self._auto: AutoCompaction | None = None  # the session's automatic compaction
        self._created = False  # this run created the session (removed again if it stays empty)
        self.stopped_by: int | None = None  # the signal that stopped the last turn, if any
        self._warned: set[Any] = set()  # the session problems already said

    @property
    def session(self) -> Session:
        assert self._session is not None
        return self._session

    @property
    def kept_session_id(self) -> str | None:
        """The session's id, unless ``close`` will remove it (a first turn that never finished)."""
        session = self._session
        if session is None or (self._created and not session.turns):
            return None
        return session.id

    # --- session lifecycle --------------------------------------------------------------------

    def _prepare(self, prov: config.ProviderConfig) -> config.ProviderConfig:
        if prov.id == config.DEMO_PROVIDER:
            from thoughtline.cli.demo import start_demo_backend

            if self.emulator is not None:
                return replace(prov, base_url=self.emulator.base_url, key_env="")
            prov, self.emulator = start_demo_backend(prov)
        return prov

    def _log(self) -> RequestLog:
        return RequestLog(self.home / "logs")

    def _auto_compact(self, session: Session) -> Session:
        """Send ``session``'s turns through automatic compaction (``[compaction]`` of
        config.toml), its own from here on."""
        from thoughtline.cli.common import progress_line
        from thoughtline.compaction import AutoCompaction, load_settings

        self._auto = AutoCompaction(load_settings(self.home), on_progress=progress_line())
        return session

    def create(self, prov: config.ProviderConfig, *, title: str = "") -> None:
        prov = self._prepare(prov)
        self._session = self._auto_compact(Session.create(self.store, prov, title=title,
                                                          log=self._log()))
        self._created = True
        self._tell_waits()

    def resume(self, ref: str | None, *, provider_id: str | None, base_url: str | None,
               model: str | None, key_env: str | None, trust_provider: bool = False) -> None:
        from thoughtline.cli.common import require_key_for
        from thoughtline.cli.trust import settle_params, settle_provider, untrusted

        if base_url:
            config.check_base_url(base_url)
        cfg = config.load_config(self.home)
        session = Session.resume(self.store, ref, log=self._log(), config=cfg)
        prov = session.provider
        if provider_id and provider_id.lower() != prov.id:
            prov = config.provider(provider_id, cfg)
        else:  # an imported session's URL and key variable are not trusted
            prov = settle_provider(prov, session.record.model_config, cfg,
                                   trust=trust_provider,
                                   say=lambda text: self.err.print(text, markup=False))
        if base_url or model or key_env:
            prov = replace(prov, base_url=base_url or prov.base_url, model=model or prov.model,
                           key_env=key_env or prov.key_env)
        if not base_url and not untrusted(session.record.model_config):
            prov = self._resume_demo(prov, session.record.model_config)
        prepared = self._prepare(prov)
        require_key_for(prepared)
        if prepared != session.provider:
            session.set_provider(prepared)
        settle_params(session, trust=trust_provider,
                      say=lambda text: self.err.print(text, markup=False))
        self._session = self._auto_compact(session)
        self._tell_waits()
        self._warn_problems()

    def _resume_demo(self, prov: config.ProviderConfig,
                     model_config: Mapping[str, Any]) -> config.ProviderConfig:
        """A session ``thoughtline demo`` made talks to its scenario's emulator, started now (the
        demo's own emulators stopped with it), as ``--provider demo`` does."""
        from thoughtline.modelconfig import DEMO_KEY

        if DEMO_KEY not in model_config:
            return prov
        from thoughtline.cli.demo import resume_backend

        return resume_backend(prov, model_config, self._cleanup) or prov

    def _warn_problems(self) -> None:
        """Say each damaged stored part once: found on resume, or later, when the stored history
        is first decoded (a resumed session reads its wire forms, not its canonical rows)."""
        for problem in self.session.problems:
            if problem not in self._warned:
                self._warned.add(problem)
                self.err.print(f"warning: turn {problem.seq}: {safe(problem.detail)} — that part "
                               "will not be sent", style="yellow")

    def _tell_waits(self) -> None:
        """A slow provider and a Retry-After wait are said on stderr, not silence."""
        self.session.transport.on_wait = lambda text: self.err.print(safe(text), style="dim",
                                                                     markup=False)

    def switch_model(self, model: str) -> None:
        self.session.set_model(model)

    def branch(self, title: str = "") -> Session:
        branched = self.session.branch(title=title or f"{self.session.record.title} (branch)")
        self._session, self._created = self._auto_compact(branched), False
        return branched

    def close(self) -> None:
        if self._created and self._session is not None and not self._session.turns:
            # The first turn never completed: no empty "(untitled)" session is left behind.
            self.store.delete_session(self._session.id)
        if self._session is not None:
            self.loop.run_until_complete(self._session.aclose())
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        if self.emulator is not None:
            self.emulator.stop()
        self._cleanup.close()
        self.loop.close()

    # --- turns --------------------------------------------------------------------------------

    def one_shot(self, text: str, *, as_json: bool) -> Done | None:
        """Send one turn; render it unless ``as_json``. Ctrl-C stops it and keeps the session."""
        return self.turn(text, render=not as_json)

    def turn(self, text: str, *, render: bool = True) -> Done | None:
        """One turn. Ctrl-C (SIGINT) and SIGTERM both stop the answer the same way: the prompt
        and what arrived are kept (marked incomplete), the request is logged; ``None`` then, and
        ``stopped_by`` says which signal it was."""
        task = self.loop.create_task(self._run(text, render))
        before = self.session.id

        def stop(signum: int) -> None:
            self.stopped_by = signum
            task.cancel()

        for signum in _STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self.loop.add_signal_handler(signum, stop, signum)
        try:
            done = self.loop.run_until_complete(task)
        except asyncio.CancelledError:
            self.err.print("[interrupted — the session is kept; the partial answer is stored "
                           "as incomplete]", style="yellow", markup=False)
            return None
        finally:
            for signum in _STOP_SIGNALS:
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    self.loop.remove_signal_handler(signum)
            terminate_gracefully()  # asyncio leaves SIGTERM at its default: take it back
            self._warn_problems()
        if done is not None:
            self._name_untitled(text)
            if self.session.id != before:
                self.err.print(f"note: another process added turns to session {before[:12]} "
                               "while this answer was written; so that no history is one the "
                               f"model never saw, this turn was stored as a new branch "
                               f"{self.session.id} (continue it with chat -r "
                               f"{self.session.id[:12]})", style="yellow", markup=False)
        return done

    def _name_untitled(self, text: str) -> None:
        """A session started without a title (interactive, no --title) is named after its first
        answered message, so ``sessions list`` and ``-r TITLE`` can find it."""
        session = self.session
        title = " ".join(text.split())[:60]
        if session.record.title or not title:
            return
        self.store.set_title(session.id, title)
        session.record = replace(session.record, title=title)

    async def _run(self, text: str, render: bool) -> Done | None:
        from thoughtline.cli.common import end_progress

        done: Done | None = None
        state = _RenderState()
        try:
            options = TurnOptions(stream=self.stream)
            turns = (self.session.stream(text, options) if self._auto is None
                     else self._auto.stream(self.session, text, options))
            async for event in turns:
                if isinstance(event, Done):
                    done = event
                    if render and not self.stream:
                        self._render_whole(event)
                elif isinstance(event, Notice):
                    end_progress()
                    self.err.print(safe(event.text), style="yellow", markup=False)
                elif render:
                    self._render_delta(event, state)
        finally:
            # End the streamed line, also when an error or Ctrl-C cut it short, so the message
            # that follows starts on a line of its own.
            if render and self.stream:
                self._end_lines(state, answered=done is not None)
        return done

    def _end_lines(self, state: _RenderState, *, answered: bool) -> None:
        if self.thoughts is self.out:
            if answered or state.reasoning or state.text:
                self.out.print()
            return
        self._close_thoughts(state)
        if answered or state.text:
            self.out.print()

    def _close_thoughts(self, state: _RenderState) -> None:
        """End the reasoning's line when it is written to a stream of its own (stderr)."""
        if state.thinking:
            self.thoughts.print()
            state.thinking = False

    def _render_delta(self, event: Any, state: _RenderState) -> None:
        separate = self.thoughts is not self.out
        if isinstance(event, ReasoningDelta):
            if self.show_reasoning:
                self.thoughts.print(safe(event.text), style="dim italic", end="", markup=False)
                state.reasoning = True
                state.thinking = separate
        elif isinstance(event, TextDelta):
            if separate:
                self._close_thoughts(state)
            elif state.reasoning and not state.text:
                self.out.print("\n")
            state.text = True
            self.out.print(safe(event.text), end="", markup=False)
        elif isinstance(event, ToolCallStarted):
            self._close_thoughts(state)
            gap = "\n" if state.text or (state.reasoning and not separate) else ""
            self.out.print(f"{gap}→ tool call: {safe_line(event.name)}", style="cyan",
                           markup=False)

    def _render_whole(self, done: Done) -> None:
        message = done.message
        thought = message.reasoning_text()
        if self.show_reasoning and thought:
            self.thoughts.print(safe(thought), style="dim italic", markup=False)
            if self.thoughts is self.out:
                self.out.print()
        if message.text:
            self.out.print(safe(message.text), markup=False)
        for call in message.tool_calls:
            self.out.print(f"→ tool call: {safe_line(call.name)}({safe(call.arguments)})",
                           style="cyan", markup=False)


class _RenderState:
    __slots__ = ("reasoning", "text", "thinking")

    def __init__(self) -> None:
        self.reasoning = False
        self.text = False
        self.thinking = False  # reasoning written to its own stream, its line not ended yet
