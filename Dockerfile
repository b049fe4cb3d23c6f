# The thoughtline gateway as a container: `thoughtline serve` on 0.0.0.0:8787, as a non-root user.
#
# Configuration comes from the environment and one mounted file, never from the image:
#   /etc/thoughtline/gateway.toml   the [server] and [[upstream]] tables (mount it read-only)
#   THOUGHTLINE_DATABASE_URL        the store (postgresql://…); unset: SQLite under THOUGHTLINE_HOME
#   THOUGHTLINE_GATEWAY_TOKENS      the bearer tokens, comma-separated (required off loopback)
#   <each upstream's api_key_env>   e.g. DEEPSEEK_API_KEY
# Before deploying: docker run --rm … thoughtline-gateway --config /etc/thoughtline/gateway.toml \
#   --check   (exit 0, or 2 naming what is wrong)
# The bind (0.0.0.0:8787) is in the ENTRYPOINT, not in CMD: arguments given to `docker run`
# replace CMD only, so --check always checks the bind the container will serve on (off loopback
# it needs THOUGHTLINE_GATEWAY_TOKENS).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    THOUGHTLINE_HOME=/var/lib/thoughtline

WORKDIR /opt/thoughtline
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir '.[postgres]' \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/thoughtline \
       --create-home --shell /usr/sbin/nologin thoughtline

USER thoughtline
EXPOSE 8787
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8787/readyz', timeout=2)"]
ENTRYPOINT ["thoughtline", "serve", "--host", "0.0.0.0", "--port", "8787"]
CMD ["--config", "/etc/thoughtline/gateway.toml"]
