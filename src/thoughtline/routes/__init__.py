"""Route data (one table per API, ``<api>.toml``) and its resolvers."""

from thoughtline.routes.chat import (
    ChatProfile,
    RouteTable,
    default_table,
    parse_table,
    resolve_chat,
)
from thoughtline.routes.resolve import (
    ApiRow,
    ApiTable,
    Route,
    api_table,
    host_matches,
    hostname_of,
    is_local_endpoint,
    parse_api_table,
    path_matches,
    path_of,
    resolve,
)

__all__ = [
    "ApiRow",
    "ApiTable",
    "ChatProfile",
    "Route",
    "RouteTable",
    "api_table",
    "default_table",
    "host_matches",
    "hostname_of",
    "is_local_endpoint",
    "parse_api_table",
    "parse_table",
    "path_matches",
    "path_of",
    "resolve",
    "resolve_chat",
]
