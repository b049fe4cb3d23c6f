"""Where an imported session may send its requests, and with which key.

Owns the rule for sessions that came from a file (``sessions import``): the conversation is kept,
but the provider's base URL and key variable the file names are not trusted — a crafted export
could otherwise send the value of any environment variable to any URL. Such a session talks to
the local preset or ``config.toml`` provider of the same id, unless the user passes
``--trust-provider`` after seeing the file's URL and variable. The request params and API settings
the file names (``n``, ``max_tokens``, a prefix-mismatch behaviour …) are held out of the session's
config at import and shape its requests only with ``--trust-provider``, which shows them; even
then no param replaces a field the codec writes (the model, the conversation, the framing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson

from thoughtline import config
from thoughtline.codecs.common import refused_params
from thoughtline.errors import UsageError
from thoughtline.modelconfig import imported_held, provider_untrusted
from thoughtline.termsafe import safe_line

if TYPE_CHECKING:
    from thoughtline.session import Session

_SHOWN = 400  # characters of the held params a notice shows


def untrusted(model_config: Mapping[str, Any]) -> bool:
    """True for a session imported from a file whose provider was not explicitly trusted."""
    return provider_untrusted(model_config)


def settle_provider(prov: config.ProviderConfig, model_config: Mapping[str, Any],
                    cfg: config.Config, *, trust: bool, say: Callable[[str], None],
                    ) -> config.ProviderConfig:
    """The provider a resumed session may use (see the module docstring)."""
    if not untrusted(model_config):
        return prov
    shown = (f"base URL {safe_line(prov.base_url) or '(none)'}, key variable "
             f"{safe_line(prov.key_env) or '(none)'}")
    if trust:
        say(f"note: --trust-provider: using the imported file's provider {safe_line(prov.id)!r} "
            f"({shown}); headers from config.toml are not sent to it")
        return replace(prov, headers=None)
    try:
        local = config.provider(prov.id, cfg)
    except UsageError as exc:
        raise UsageError(
            f"this session was imported from a file; its provider {prov.id!r} is neither a "
            f"preset nor in config.toml, and the file's {shown} is not trusted. Pass "
            "--provider ID to use one of yours, or --trust-provider to use the file's."
        ) from exc
    if (local.base_url, local.key_env) != (prov.base_url, prov.key_env):
        say(f"note: imported session: using your {safe_line(local.id)!r} settings (base URL "
            f"{safe_line(local.base_url) or '(none)'}, key variable "
            f"{safe_line(local.key_env) or '(none)'}), not the file's {shown}; "
            "--trust-provider uses the file's")
    return replace(local, model=prov.model or local.model)


def settle_params(session: Session, *, trust: bool, say: Callable[[str], None]) -> None:
    """Use the params and settings an imported file named only when ``trust`` is given, and say
    which are used or left out (see the module docstring)."""
    model_config = session.record.model_config
    if not untrusted(model_config):
        return
    params, settings = imported_held(model_config)
    if not params and not settings:
        return
    names = ", ".join(safe_line(str(name)) for name in [*params, *settings])
    if not trust:
        say(f"note: imported session: the file's request params and settings ({names}) are not "
            "used; --trust-provider uses them")
        return
    session.trust_imported()
    shown = safe_line(orjson.dumps({"params": params, "settings": settings}).decode())
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN] + "…"
    say(f"note: --trust-provider: using the imported file's request params and settings {shown}")
    refused = refused_params(params, session.codec.owned)
    if refused:
        say(f"note: left out, the request builder writes them itself: "
            f"{', '.join(safe_line(name) for name in refused)}")
