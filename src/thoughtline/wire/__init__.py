"""The one wire cache (its modules are listed in docs/design.md). Nothing is imported here:
``codecs.base`` imports ``facts`` and ``cache`` imports the codecs."""
