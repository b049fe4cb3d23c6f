"""``thoughtline routes``: how a (provider, base URL, model) resolves, in data or in words."""

from __future__ import annotations

import json

import click

from thoughtline import config
from thoughtline.routes import Route, resolve
from thoughtline.routes.resolve import native_explanations

_CARRIER_WORDS = {
    "reasoning_content": "reasoning_content (readable reasoning)",
    "reasoning": "reasoning (the same readable text)",
    "reasoning_details": "reasoning_details (structured items, signed/encrypted ones verbatim)",
}


def describe(route: Route) -> list[str]:
    """The resolution in words a user understands."""
    where = route.host or "(no base URL)"
    lines = [f"{route.provider} @ {where}, model {route.model or '(none)'}",
             f"route: {route.row} — {route.explain}"]
    if route.carriers:
        lines.append("replayed on assistant turns: "
                     + ", ".join(_CARRIER_WORDS.get(c, c) for c in sorted(route.carriers)))
    else:
        lines.append("replayed on assistant turns: nothing — no reasoning fields are sent, "
                     "not even the placeholder")
    if route.must_echo:
        lines.append(f"must-echo ({route.echo_family}): every assistant turn carries "
                     "reasoning_content — its reasoning, else a single-space placeholder \" \" — "
                     "or the provider rejects tool-call turns")
    lines.extend(route.notes)
    if route.body_extras:
        lines.append("keep-thinking body fields added to every request: "
                     + json.dumps(route.body_extras, separators=(", ", ": ")))
    for text in native_explanations(sorted(route.native)):
        lines.append(f"provider-native carrier: {text}")
    return lines


@click.command()
@click.option("--provider", "provider_id", default="custom", show_default=True,
              help="Preset id or a provider named in config.toml.")
@click.option("--base-url", help="Override the preset's base URL (the provider id is kept).")
@click.option("--model", help="Model id (default: the preset's).")
@click.option("--json", "as_json", is_flag=True, help="Print the resolution as one JSON object.")
@click.pass_context
def routes(ctx: click.Context, provider_id: str, base_url: str | None, model: str | None,
           as_json: bool) -> None:
    """Explain which reasoning fields a route receives.

    \b
    Examples:
      thoughtline routes --provider deepseek
      thoughtline routes --provider custom --base-url https://api.groq.com/openai/v1 --json
    """
    home = config.home(ctx.obj.get("home") if ctx.obj else None)
    cfg = config.load_config(home)
    prov = config.provider(provider_id, cfg, base_url=base_url, model=model)
    route = resolve(prov.id, prov.base_url, prov.model, echo=prov.echo)  # type: ignore[arg-type]
    if as_json:
        click.echo(json.dumps(route.to_json()))
        return
    for line in describe(route):
        click.echo(line)
