"""The route table (data, ``table.toml``) and its resolver."""

from thoughtline.routes.resolve import (
    Route,
    RouteTable,
    default_table,
    host_matches,
    hostname_of,
    is_local_endpoint,
    parse_table,
    resolve,
)

__all__ = [
    "Route",
    "RouteTable",
    "default_table",
    "host_matches",
    "hostname_of",
    "is_local_endpoint",
    "parse_table",
    "resolve",
]
