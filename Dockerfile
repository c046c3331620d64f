# Docket's image: gunicorn, the Celery worker and beat all run from it (see compose.yaml and docs/deploy.md).
#   docker build -t docket .            (or: podman build -t docket .)
# BASE may be any Debian 12 image: python:3.11-slim-bookworm (the default), or plain Debian 12 (debian:bookworm-slim,
# or a root file system made with debootstrap and imported), where Debian's own Python 3.11 is installed.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

# WeasyPrint's libraries (Pango, HarfBuzz) and fonts for the PDFs (DejaVu, and WenQuanYi Micro Hei for Chinese
# text: the zh-hans pages and what a committee writes in Chinese); Chromium prints their charts;
# python-ldap (LDAP sign-in) is built against libldap and libsasl.
# WITH_CHROMIUM=0 leaves it out: PDFs then have tables and no charts.
ARG WITH_CHROMIUM=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 \
       fonts-dejavu-core fonts-wqy-microhei ca-certificates \
       gcc libc6-dev libldap2-dev libsasl2-dev \
    && if [ "$WITH_CHROMIUM" = "1" ]; then apt-get install -y --no-install-recommends chromium; fi \
    && if ! command -v python3 >/dev/null; then \
         apt-get install -y --no-install-recommends python3 python3-venv python3-dev; fi \
    && rm -rf /var/lib/apt/lists/*

# A virtual environment, whichever Python the base brings (Debian's refuses system-wide pip installs).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY requirements-pip.txt requirements.txt requirements-ldap.txt ./
# The venv's pip first becomes the locked one (requirements-pip.txt): the pip a base bundles may not read the locks.
# Behind a TLS-inspecting proxy, give pip the company's CA bundle as a build secret:
#   docker build --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt .
RUN --mount=type=secret,id=ca_bundle,required=false \
    python3 -m venv /opt/venv \
    && if [ -f /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi \
    && python -m pip install --require-hashes -r requirements-pip.txt \
    && pip install --require-hashes -r requirements.txt -r requirements-ldap.txt

COPY . .
# Static files are collected into the image; WhiteNoise serves them with hashed names.
RUN SECRET_KEY=collectstatic-only DEBUG=0 ALLOWED_HOSTS=localhost python manage.py collectstatic --no-input \
    && useradd --system --uid 10001 --home /app docket && mkdir -p /app/media && chown docket /app/media
USER docket

EXPOSE 8000
# Liveness: /healthz answers without the database; readiness (/readyz) is for the orchestrator.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
    CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"
# Every interface of the container, whose network is private: publish the port only to the proxy in front
# (compose.yaml publishes it on the host's 127.0.0.1), and name the proxy in DOCKET_TRUSTED_PROXIES.
# gthread workers (threads answer /healthz and the scheduler API while others wait on a slow dependency); each worker
# is replaced after 1,000-1,100 requests, so memory a long run gathers is given back (docs/deploy.md, "gunicorn").
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "4", "--threads", "4", \
     "--max-requests", "1000", "--max-requests-jitter", "100", "--access-logfile", "-"]
