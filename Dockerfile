# syntax=docker/dockerfile:1
# The leaderboard service: `docker build -t leaderboard .`, then see compose.yaml or docs/deploy.md.

# ---- build: the locked runtime dependencies, then the project, into /app/.venv ----------------
FROM python:3.11-slim AS build

# The same uv as the README pins; from PyPI, like every other dependency.
RUN pip install --no-cache-dir uv==0.13.9

# The image's own interpreter, never one uv downloads: the venv must run in the runtime stage,
# which has this same interpreter at the same path. Bytecode is compiled here, once, because the
# runtime user cannot write into the venv.
ENV UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/app/.venv

WORKDIR /src

# Dependencies alone first, from the lock and nothing else, so this layer (and uv's cache) is
# reused until uv.lock or pyproject.toml change. No dev, local (moto), load, infra or tools group.
RUN --mount=type=cache,target=/root/.cache/uv \
    --mount=type=bind,source=uv.lock,target=uv.lock \
    --mount=type=bind,source=pyproject.toml,target=pyproject.toml \
    uv sync --frozen --no-dev --no-default-groups --no-install-project

# Then the project itself, as a regular (non-editable) install, so the runtime needs only the venv.
COPY pyproject.toml uv.lock README.md LICENSE ./
COPY app ./app
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-default-groups --no-editable

# ---- runtime: the interpreter and the venv, no compilers, no uv, no sources ------------------
FROM python:3.11-slim AS runtime

# A fixed numeric id, so orchestrators can check "not root" without reading /etc/passwd.
RUN groupadd --system --gid 10001 leaderboard \
    && useradd --system --uid 10001 --gid leaderboard --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin leaderboard

COPY --from=build /app/.venv /app/.venv

# LEADERBOARD_ALLOW_EMBEDDED_BACKEND=false: a container started without an endpoint (and not in
# production) refuses to start, instead of trying to run moto, which is not installed here.
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONFAULTHANDLER=1 \
    LEADERBOARD_ALLOW_EMBEDDED_BACKEND=false

USER 10001:10001
WORKDIR /app
EXPOSE 8000

# Liveness only (/healthz): a container whose tables are unreachable is alive but not ready, and
# restarting it would not help; readiness (/readyz) is the load balancer's question. No curl in
# slim, so the interpreter asks.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]

# Exec form, no shell in between: SIGTERM from `docker stop` or ECS reaches the server itself,
# which finishes in-flight requests within LEADERBOARD_SHUTDOWN_GRACE_SECONDS. One worker per
# container: scale by adding containers. Another command (`snapshot --closed-periods`,
# `create-tables`, `keys create ...`) replaces CMD and keeps the entrypoint.
ENTRYPOINT ["leaderboard"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
