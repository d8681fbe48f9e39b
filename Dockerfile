# The Hangar platform image: one image, three roles chosen by command (see deploy/compose.yaml):
#   web:    daphne -b 0.0.0.0 -p 8000 hangar.asgi:application      (the default CMD)
#   worker: bash deploy/run-worker.sh  (the engine's queue, and the repository queue in a second process)
#   beat:   celery -A hangar beat --schedule /tmp/celerybeat-schedule
#   once:   python manage.py migrate / bootstrap --json
# Three stages: `platform` (the Python dependencies and code), `webapp` (the web app built with Node from
# the platform's OpenAPI schema) and the image itself (the platform with the built web app at `/`).
# BASE_IMAGE: python:3.11-slim on a normal machine. Where no registry is reachable, build FROM the offline
# Debian base the sandbox recipe makes (`docker build --build-arg BASE_IMAGE=hangar-base:<hash> .`); it has
# Debian's python3.11 but not venv/pip, which the first RUN adds from the Debian mirror. NODE_IMAGE: a
# Node.js 20.19+ image (Vite's floor; Debian bookworm's nodejs is 18), used only to build the web app.
ARG BASE_IMAGE=python:3.11-slim
ARG NODE_IMAGE=node:20-bookworm-slim
FROM ${BASE_IMAGE} AS platform

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app/platform:/app \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Behind a TLS-intercepting proxy, its CA goes in deploy/certs/*.crt (git-ignored) so pip can reach PyPI.
COPY deploy/certs/ /usr/local/share/ca-certificates/hangar/
RUN if ! python3 -c "import venv, ensurepip" 2>/dev/null || ! command -v update-ca-certificates >/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends python3-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && update-ca-certificates \
    && python3 -m venv /opt/venv \
    && groupadd --system --gid 10001 hangar \
    && useradd --system --uid 10001 --gid hangar --home-dir /app --shell /usr/sbin/nologin hangar

WORKDIR /app
# Dependencies first (cached across code changes): the pinned runtime list from pyproject.toml (not the
# `dev` extra: tests and gates stay out of the image).
COPY pyproject.toml ./
RUN python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml','rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

COPY manage.py ./
COPY platform ./platform
COPY sandbox ./sandbox
COPY deploy/run-worker.sh ./deploy/run-worker.sh
# The API schema the web app's types are generated from (frontend/build.sh does the same on a host).
RUN DJANGO_SECRET_KEY=build HANGAR_TOKEN_PEPPERS=build HANGAR_ENCRYPTION_KEYS=build \
        python manage.py spectacular --file /tmp/openapi.yaml

FROM ${NODE_IMAGE} AS webapp
WORKDIR /web
COPY frontend/package.json frontend/package-lock.json ./
# Node reads no system CA store: a TLS-intercepting proxy's CA (deploy/certs, as above) is given to it.
COPY deploy/certs/ /tmp/certs/
RUN if ls /tmp/certs/*.crt >/dev/null 2>&1; then \
        cat /tmp/certs/*.crt > /tmp/extra-ca.pem && export NODE_EXTRA_CA_CERTS=/tmp/extra-ca.pem; \
    fi \
    && npm ci --no-audit --no-fund --loglevel=error
COPY frontend/index.html frontend/vite.config.ts frontend/tsconfig.json ./
COPY frontend/src ./src
COPY --from=platform /tmp/openapi.yaml /tmp/openapi.yaml
RUN npx openapi-typescript /tmp/openapi.yaml -o src/api/schema.d.ts \
    && npx tsc --noEmit \
    && npx vite build --logLevel warn

FROM platform
COPY --from=webapp /web/dist ./frontend/dist
# Static files (the web app, admin, Swagger UI sidecar) baked in; the placeholder keys exist only for this build step.
RUN DJANGO_SECRET_KEY=build HANGAR_TOKEN_PEPPERS=build HANGAR_ENCRYPTION_KEYS=build \
        python manage.py collectstatic --noinput -v0 \
    && chown -R hangar:hangar /app/staticfiles

USER hangar
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "hangar.asgi:application"]
