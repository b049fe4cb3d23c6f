"""``thoughtline routes``: how a (provider, base URL, model) resolves, in data or in words."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import click

from thoughtline import config
from thoughtline.routes import Route
from thoughtline.termsafe import safe_line


def describe(route: Route, default_url: str = "") -> list[str]:
    """The resolution in words a user understands; ``default_url`` is where requests go when
    the route names no host (a region-templated preset URL)."""
    where = route.host or (f"{default_url} (the default)" if default_url else "(no base URL)")
    lines = [f"{route.provider} @ {where}, model {route.model or '(none)'}",
             f"route: {route.row} — {route.explain}"]
    return [*lines, *route.profile.describe(), *route.notes]


def _learned(ctx: click.Context, route: Route, session_ref: str | None) -> list[Any]:
    """Verdicts that apply to this route: the global ledger's, plus the session's if named."""
    from thoughtline.cli.common import open_store
    from thoughtline.errors import HomeError
    from thoughtline.replay import Verdict, applicable

    try:
        store = open_store(ctx)
    except HomeError as exc:
        if session_ref:
            raise
        # The resolution needs no state: show it, and say why nothing learned is shown.
        click.echo(f"note: learned verdicts are not shown: {exc}", err=True)
        return []
    try:
        known = list(store.verdicts())
        if session_ref:
            record = store.get_session(session_ref)
            known += [Verdict.from_json(v) for v in record.model_config.get("verdicts", ())]
    finally:
        store.close()
    merged: dict[tuple[str, str, str], Verdict] = {}
    for verdict in applicable(route, known):
        if verdict.key in merged:
            # The session's copy and the ledger usually hold the same lesson: say it once.
            both = merged[verdict.key].merged(verdict)
            reasons = dict.fromkeys(r for r in both.reason.split("; ") if r)
            verdict = replace(both, reason="; ".join(reasons))
        merged[verdict.key] = verdict
    return list(merged.values())


@click.group(invoke_without_command=True)
@click.option("--provider", "provider_id", default="custom", show_default=True,
              help="Preset id or a provider named in config.toml.")
@click.option("--base-url", help="Override the preset's base URL (the provider id is kept).")
@click.option("--model", help="Model id (default: the preset's).")
@click.option("--session", "session_ref", metavar="SESSION",
              help="Also show what this session learned (id, prefix or title).")
@click.option("--json", "as_json", is_flag=True, help="Print the resolution as one JSON object.")
@click.pass_context
def routes(ctx: click.Context, provider_id: str, base_url: str | None, model: str | None,
           session_ref: str | None, as_json: bool) -> None:
    """Explain which reasoning fields a route receives, and what was learned about it.

    \b
    Examples:
      thoughtline routes --provider deepseek
      thoughtline routes --provider custom --base-url https://api.groq.com/openai/v1 --json
      thoughtline routes forget --provider mistral          # clear learned verdicts
    """
    if ctx.invoked_subcommand is not None:
        return
    from thoughtline.cli.common import home_path
    from thoughtline.codecs.registry import codec, route_for
    from thoughtline.replay import plan

    cfg = config.load_config(home_path(ctx))
    prov = config.provider(provider_id, cfg, base_url=base_url, model=model)
    route = route_for(codec(prov.api), prov)
    learned = _learned(ctx, route, session_ref)
    effective = plan(route, learned)
    wire = effective.profile.effective_json()
    if as_json:
        data = route.to_json()
        if learned:
            data["verdicts"] = [v.to_json() for v in learned]
            data["effective_carriers"] = wire.get("carriers", [])
            data["effective_must_echo"] = wire.get("must_echo", False)
        click.echo(json.dumps(data))
        return
    for line in describe(route, _default_url(prov)):
        click.echo(safe_line(line))
    if prov.id == config.DEMO_PROVIDER and prov.base_url == config.DEMO_BASE_URL:
        click.echo("demo: the built-in emulator, started on a free loopback port for each chat")
    for verdict in learned:
        what = [f"stop sending {', '.join(sorted(verdict.drop))}"] if verdict.drop else []
        if verdict.pad:
            what.append("send the placeholder on assistant turns without reasoning")
        # Reasons are stored text (a provider's words, or an imported file's): shown inert.
        click.echo(safe_line(f"learned: {' and '.join(what)} "
                             f"({verdict.reason or 'from a 4xx'})"))
    if learned:
        click.echo("effective on the wire: " + (", ".join(wire.get("carriers", [])) or "nothing"))


def _default_url(prov: config.ProviderConfig) -> str:
    """The URL a preset without a base URL talks to, from its codec (Bedrock's is per region)."""
    from thoughtline.codecs.registry import codec

    default = getattr(codec(prov.api), "default_base_url", None)
    return default(prov) if default is not None else ""




@routes.command()
@click.option("--provider", "provider_id", help="Only verdicts for this provider id.")
@click.option("--host", help="Only verdicts for this host.")
@click.option("--model", help="Only verdicts for this model.")
@click.pass_context
def forget(ctx: click.Context, provider_id: str | None, host: str | None,
           model: str | None) -> None:
    """Clear learned verdicts from the global ledger (all of them without filters).

    Sessions keep their own copy; a new session starts from the ledger.
    """
    from thoughtline.cli.common import open_store

    store = open_store(ctx)
    try:
        count = store.forget_verdicts(provider=provider_id.lower() if provider_id else None,
                                      host=host.lower() if host else None, model=model)
    finally:
        store.close()
    click.echo(f"forgot {count} verdict{'s' if count != 1 else ''}")
