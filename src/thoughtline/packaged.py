"""Data files shipped inside the package (route tables, presets, known models).

Read through the package's own loader (``pkgutil.get_data``): it works for a plain install and a
zipped one alike, and costs a fraction of ``importlib.resources``, whose first use imports its
reader machinery — measurable on every resume, which reads a route table.
"""

from __future__ import annotations

import pkgutil

from thoughtline.errors import ConfigError


def packaged_text(package: str, name: str) -> str:
    """The UTF-8 text of ``name`` shipped in ``package`` (``FileNotFoundError`` when absent)."""
    data = pkgutil.get_data(package, name)
    if data is None:
        raise ConfigError(f"cannot read {package}/{name}: its loader cannot read data files")
    return data.decode("utf-8")
