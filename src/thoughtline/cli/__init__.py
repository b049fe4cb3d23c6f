"""The ``thoughtline`` command line: one module per command group, imported only when used."""
