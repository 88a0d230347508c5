# agentsite for production: the web server, a worker or beat, by the command it is given (see
# Procfile and compose.yaml). Configuration comes from the environment (README, Configuration).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    AGENTSITE_VAR_DIR=/var/lib/agentsite \
    PORT=8000

# bubblewrap: the sandbox of the command tools (shell, python); without it they are not offered.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml manage.py ./
COPY agentsite ./agentsite
COPY planner_ui ./planner_ui
# Editable, so the code, templates and static files stay together under /app. No "embedded"
# extra: production names a Redis server in REDIS_URL.
RUN pip install --no-cache-dir -e .
COPY templates ./templates
COPY static ./static

RUN useradd --system --uid 10001 --home-dir /var/lib/agentsite agentsite \
    && mkdir -p /var/lib/agentsite \
    && DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput \
    && chown -R agentsite /var/lib/agentsite
USER agentsite

EXPOSE 8000
CMD ["sh", "-c", "exec daphne -b 0.0.0.0 -p ${PORT:-8000} agentsite.asgi:application"]
