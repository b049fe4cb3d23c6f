"""Route data (one table per API, ``<api>.toml``) and its matching; what a row's ``profile`` means
is the API's codec's (``codecs/<api>/profile.py``)."""

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
)

__all__ = [
    "ApiRow",
    "ApiTable",
    "Route",
    "api_table",
    "host_matches",
    "hostname_of",
    "is_local_endpoint",
    "parse_api_table",
    "path_matches",
    "path_of",
]
