"""Docket settings. Every value comes from the environment; see docs/configuration.md."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import plotly
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from config.env import (
    database_from_url,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_networks,
    env_rate,
    env_str,
    env_url,
    site_url_for,
)
from core.isoweek import WEEK_PATTERN
from core.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "insecure-development-key-only-for-debug"  # noqa: S105 (DEBUG only)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
CSRF_FAILURE_VIEW = "core.errors.csrf_failure"  # JSON under /api/
# Where `make run` serves (the Makefile passes HOST and PORT); links in e-mails and the commands
# seed_demo prints point there unless SITE_URL names the public address.
RUN_HOST = env_str("HOST", "127.0.0.1")
RUN_PORT = env_int("PORT", 8000, minimum=1, maximum=65535)
SITE_URL = env_url("SITE_URL", site_url_for(RUN_HOST, RUN_PORT))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_prometheus",
    "simple_history",
    "governed",
    "allocations",
    "committee",
    "policy",
    "reports",
    "sso",
]

MIDDLEWARE = [
    # First: /healthz and /readyz answer before the host check, the HTTPS redirect and sessions (core/health.py).
    "core.health.ProbeMiddleware",
    # The request id (X-Request-ID) on the response and on every log line of the request (core/logs.py).
    "core.logs.RequestIdMiddleware",
    # /metrics for Prometheus, to allowed networks or a bearer token only (core/metrics.py); then the counters.
    "core.metrics.MetricsMiddleware",
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "core.security.ContentSecurityPolicyMiddleware",
    # HTML and JSON compressed for a client that accepts it (static files: WhiteNoise). BREACH: docs/security.md;
    # Django's GZipMiddleware, except that an answer with a strong ETag keeps one (core/compression.py).
    "core.compression.GZipMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "core.api.SingleQueryValuesMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # An OpenID Connect session whose ID token is old is re-checked with the provider (sso/middleware.py).
    "sso.middleware.OidcSessionRefresh",
    "django.contrib.messages.middleware.MessageMiddleware",
    # An LDAP session is checked against the directory again every DOCKET_LDAP_RECHECK_SECONDS (sso/middleware.py).
    "sso.middleware.LdapSessionRecheck",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Turns a sign-in that django-axes refused into the lockout page (committee.views.auth.locked_out).
    "axes.middleware.AxesMiddleware",
    # Innermost, so it sees a view's exception first: a database that cannot be reached answers 503.
    "core.middleware.DatabaseUnavailableMiddleware",
    # Who changed a fair-share weight, a pool or a seat: django-simple-history reads the request's user.
    "simple_history.middleware.HistoryRequestMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "committee.context_processors.roles",
                "committee.context_processors.inbox_and_intake",
                "sso.context_processors.sign_in",
            ],
            # core/ is not an app: its template library is named here ({% load docket_format %}).
            "libraries": {"docket_format": "core.templatetags.docket_format"},
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
DATABASES = {"default": database_from_url("DATABASE_URL", DATABASE_URL)}
# PostgreSQL through django-prometheus's wrapper of the same backend: query counts and errors on /metrics.
# (SQLite, for development and the tests, stays Django's own: pytest-django names test databases by it.)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "django_prometheus.db.backends.postgresql"
DATABASES["default"]["ATOMIC_REQUESTS"] = False
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0)
# With persistent connections, check a kept connection at the start of each request (a SELECT 1) so
# that after a database restart each worker reconnects instead of failing its next request.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env_bool("DATABASE_CONN_HEALTH_CHECKS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# A shared cache (Redis) in production, so the API's rate limits hold across workers (check --deploy says so
# when it is missing: committee/checks.py). Failed sign-ins are counted in the database instead (django-axes).
CACHE_URL = env_str("CACHE_URL")
# Connect and read timeouts: a Redis that hangs must not hold a request (or a sign-in) for good. Short: Redis answers
# in a millisecond, and after one timeout the rate limits stop asking it for a while (core/breaker.py).
CACHE_SOCKET_TIMEOUT = env_float("CACHE_SOCKET_TIMEOUT", 0.5, above=0, maximum=60)
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CACHE_URL,
        "OPTIONS": {"socket_connect_timeout": CACHE_SOCKET_TIMEOUT, "socket_timeout": CACHE_SOCKET_TIMEOUT},
    }
    if CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
# Failed sign-ins (django-axes, docs/security.md): counted per username *and* client address, so nobody elsewhere
# can lock a person out; after LOGIN_FAILURE_LIMIT failures within LOGIN_FAILURE_WINDOW_SECONDS that pair is
# refused until the window has passed since its last failure (or an admin deletes the lockout). A success
# clears only its own pair. Counts live in the database and each attempt waits for the one before it from the
# same pair (committee/views/auth.py), so concurrent guesses cannot slip past the limit.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("LOGIN_FAILURE_WINDOW_SECONDS", 900, minimum=60, maximum=7 * 24 * 3600)
# The reverse proxies in front of Docket (core/client.py): X-Forwarded-For is believed only from a peer in
# DOCKET_TRUSTED_PROXIES (CIDRs), through at most DOCKET_TRUSTED_PROXY_COUNT proxies (each appends to the header).
# Without both, the client is the peer address (REMOTE_ADDR) and the header is ignored, so a client that reaches
# gunicorn directly cannot choose its address; check --deploy warns about a count without networks. The sign-in
# lockouts use this address.
DOCKET_TRUSTED_PROXY_COUNT = env_int("DOCKET_TRUSTED_PROXY_COUNT", 0, minimum=0, maximum=10)
DOCKET_TRUSTED_PROXIES = env_networks("DOCKET_TRUSTED_PROXIES", [])
# Failed sign-ins from one client address, whatever the usernames, before that address is refused for the window:
# password spraying (a few guesses at every account) is held to this many guesses per window.
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 20, minimum=2)
if LOGIN_ADDRESS_FAILURE_LIMIT <= LOGIN_FAILURE_LIMIT:
    raise ImproperlyConfigured(
        f"LOGIN_ADDRESS_FAILURE_LIMIT must be above LOGIN_FAILURE_LIMIT ({LOGIN_FAILURE_LIMIT}); "
        f"got {LOGIN_ADDRESS_FAILURE_LIMIT}"
    )
AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out pair before any other backend checks a password.
    "axes.backends.AxesStandaloneBackend",
    # Then local passwords (only a superuser's with DOCKET_LOCAL_LOGIN=0), LDAP and OpenID Connect (sso/):
    # each does nothing unless its own settings are there.
    "sso.backends.LocalPasswordBackend",
    "sso.backends.DocketLDAPBackend",
    "sso.backends.DocketOIDCBackend",
]
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=LOGIN_FAILURE_WINDOW_SECONDS)
# The pair first, then the address alone: committee.lockouts.LockoutHandler gives each its own limit.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_HANDLER = "committee.lockouts.LockoutHandler"
AXES_RESET_ON_SUCCESS = True  # resets the signed-in username's count from that address, nobody else's
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # the lockout ends when the page says it does
AXES_CLIENT_IP_CALLABLE = "core.client.client_address"
AXES_USERNAME_CALLABLE = "committee.views.auth.sign_in_username"  # "Chair" and "chair" count together
AXES_LOCKOUT_CALLABLE = "committee.views.auth.locked_out"
AXES_HTTP_RESPONSE_CODE = 429
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on (docs/deploy.md). Local passwords can be turned off; a superuser's still works (break-glass).
DOCKET_LOCAL_LOGIN = env_bool("DOCKET_LOCAL_LOGIN", True)
# OpenID Connect (mozilla-django-oidc): on when OIDC_RP_CLIENT_ID and OIDC_ISSUER (or the endpoints) are set.
OIDC_ISSUER = env_str("OIDC_ISSUER").rstrip("/")
# Endpoints left empty come from the issuer's discovery document (sso/oidc.py).
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT")
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile groups")
OIDC_RP_SIGN_ALGO = env_choice("OIDC_RP_SIGN_ALGO", "RS256", ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512"])
OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
# client_secret_basic (the OpenID default) when on, client_secret_post when off.
OIDC_TOKEN_USE_BASIC_AUTH = env_bool("OIDC_TOKEN_USE_BASIC_AUTH", True)
OIDC_USERNAME_CLAIM = env_str("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
# The claim naming the person's manager (a username, or an LDAP DN whose first value is one): the manager chain that
# finds likely conflicts of interest (docs/conflicts.md). Empty: not read.
OIDC_MANAGER_CLAIM = env_str("OIDC_MANAGER_CLAIM", "manager")
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
OIDC_TIMEOUT = env_float("OIDC_TIMEOUT", 10.0, above=0, maximum=120)
OIDC_VERIFY_SSL = env_bool("OIDC_VERIFY_SSL", True)
# How long a sign-in is trusted before the next page re-checks it with the provider (prompt=none).
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env_int("OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS", 900, minimum=30)
# Signing out of Docket ends the session at the provider too (RP-initiated logout, through its end_session_endpoint
# or OIDC_OP_LOGOUT_ENDPOINT), so the next person at a shared browser is not signed in as the last one.
OIDC_OP_LOGOUT_ENDPOINT = env_str("OIDC_OP_LOGOUT_ENDPOINT")
OIDC_END_PROVIDER_SESSION = env_bool("OIDC_END_PROVIDER_SESSION", True)
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of that sign-out
OIDC_CREATE_USER = True
OIDC_CALLBACK_CLASS = "sso.views.SignInCallbackView"
OIDC_AUTHENTICATE_CLASS = "sso.views.SignInStartView"
LOGIN_REDIRECT_URL_FAILURE = "login"
if OIDC_RP_CLIENT_ID and not (OIDC_ISSUER or OIDC_OP_AUTHORIZATION_ENDPOINT):
    raise ImproperlyConfigured("OIDC_RP_CLIENT_ID is set: set OIDC_ISSUER too (or every OIDC_OP_*_ENDPOINT).")
if OIDC_RP_CLIENT_ID and not OIDC_RP_CLIENT_SECRET:
    raise ImproperlyConfigured("OIDC_RP_CLIENT_ID is set but OIDC_RP_CLIENT_SECRET is not.")
if OIDC_ISSUER:
    env_url("OIDC_ISSUER", OIDC_ISSUER)  # an http(s) URL, or a clear error

# LDAP (django-auth-ldap): on when LDAP_SERVER_URI is set. The sign-in form's password is checked by binding as
# the person found by LDAP_USER_FILTER under LDAP_USER_SEARCH_BASE; their groups set memberships as OIDC's do.
AUTH_LDAP_SERVER_URI = env_str("LDAP_SERVER_URI")
if AUTH_LDAP_SERVER_URI:
    try:
        import ldap
    except ImportError:
        raise ImproperlyConfigured(
            "LDAP_SERVER_URI is set but python-ldap is not installed: pip install -r requirements-ldap.txt "
            "(it builds against libldap2-dev and libsasl2-dev)."
        ) from None
    from django_auth_ldap.config import (
        GroupOfNamesType,
        GroupOfUniqueNamesType,
        LDAPGroupType,
        LDAPSearch,
        PosixGroupType,
    )

    _ldap_group_types: dict[str, tuple[str, LDAPGroupType]] = {
        "groupOfNames": ("(objectClass=groupOfNames)", GroupOfNamesType()),
        "groupOfUniqueNames": ("(objectClass=groupOfUniqueNames)", GroupOfUniqueNamesType()),
        "posixGroup": ("(objectClass=posixGroup)", PosixGroupType()),
    }
    AUTH_LDAP_BIND_DN = env_str("LDAP_BIND_DN")
    AUTH_LDAP_BIND_PASSWORD = env_str("LDAP_BIND_PASSWORD")
    _ldap_user_base = env_str("LDAP_USER_SEARCH_BASE")
    if not _ldap_user_base:
        raise ImproperlyConfigured("LDAP_SERVER_URI is set: set LDAP_USER_SEARCH_BASE (ou=people,dc=example,dc=com)")
    AUTH_LDAP_USER_SEARCH = LDAPSearch(
        _ldap_user_base, ldap.SCOPE_SUBTREE, env_str("LDAP_USER_FILTER", "(uid=%(user)s)")
    )
    _ldap_group_base = env_str("LDAP_GROUP_SEARCH_BASE")
    _ldap_filter, AUTH_LDAP_GROUP_TYPE = _ldap_group_types[
        env_choice("LDAP_GROUP_TYPE", "groupOfNames", list(_ldap_group_types))
    ]
    if _ldap_group_base:
        AUTH_LDAP_GROUP_SEARCH = LDAPSearch(_ldap_group_base, ldap.SCOPE_SUBTREE, _ldap_filter)
    AUTH_LDAP_START_TLS = env_bool("LDAP_START_TLS", False)
    AUTH_LDAP_USER_ATTR_MAP = {"first_name": "givenName", "last_name": "sn", "email": "mail"}
    AUTH_LDAP_ALWAYS_UPDATE_USER = True
    AUTH_LDAP_MIRROR_GROUPS = False  # LDAP groups give memberships through SsoGroupMapping, not Django groups
    _ldap_timeout = env_float("LDAP_TIMEOUT", 5.0, above=0, maximum=120)
    AUTH_LDAP_CONNECTION_OPTIONS = {ldap.OPT_NETWORK_TIMEOUT: _ldap_timeout, ldap.OPT_TIMEOUT: _ldap_timeout}
# An LDAP session is checked against the directory again after this many seconds (sso.middleware.LdapSessionRecheck):
# a person no longer found there is signed out and loses their tokens; their groups set their memberships again.
# The LDAP attribute naming the person's manager (a DN, e.g. "uid=ada,ou=people,dc=example,dc=com": its first value is
# the manager's username), for the manager chain (docs/conflicts.md). Empty: not read.
LDAP_MANAGER_ATTRIBUTE = env_str("LDAP_MANAGER_ATTRIBUTE", "manager")
DOCKET_LDAP_RECHECK_SECONDS = env_int("DOCKET_LDAP_RECHECK_SECONDS", 900, minimum=30)

# AUTHENTICATION_BACKENDS (above): each backend stands aside unless its own settings are there (the LDAP one without
# LDAP_SERVER_URI, the OpenID one without a client id), so the list is the same everywhere.

# Storage is always UTC (USE_TZ); TIME_ZONE is the zone pages display and the weekly clock
# runs in: the committee's own.
USE_TZ = True
TIME_ZONE = env_str("DOCKET_TIME_ZONE", "UTC")
# The languages Docket ships a catalogue for (locale/, docs/maintaining.md); each named in its own language,
# as the footer's switch lists them. LANGUAGE_CODE is the default for whoever has not chosen.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LANGUAGE_CODE = env_choice("LANGUAGE_CODE", "en", [code for code, _name in LANGUAGES])
USE_I18N = True
LOCALE_PATHS = [BASE_DIR / "locale"]
# Number formats of our own where Django's locale differs from how Docket's readers write (core/formats/).
FORMAT_MODULE_PATH = ["core.formats"]
# The footer's switch (django.views.i18n.set_language) keeps the choice in a cookie for a year, sent over
# HTTPS only where the session cookie is.
LANGUAGE_COOKIE_AGE = 60 * 60 * 24 * 365
LANGUAGE_COOKIE_SAMESITE = "Lax"
LANGUAGE_COOKIE_HTTPONLY = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [
    BASE_DIR / "static",
    # Plotly's JS ships inside the plotly package; the app serves it itself (no CDN).
    ("plotly", Path(plotly.__file__).resolve().parent / "package_data"),
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("STATIC_MANIFEST", not DEBUG)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = env_bool("WHITENOISE_USE_FINDERS", DEBUG)
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / "media")))
MEDIA_URL = "/media/"

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # First: a scheduler token is never a person (request.user stays anonymous).
        "allocations.api.authentication.SchedulerTokenAuthentication",
        "committee.api.authentication.PersonalTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # The API is for scripts and schedulers: JSON in (no form encodings, whose empty fields and
    # flattened lists would say something else than the schema), JSON out.
    "DEFAULT_PARSER_CLASSES": ["core.json_parser.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": env_int("API_PAGE_SIZE", 100, minimum=1, maximum=1000),
    "DEFAULT_SCHEMA_CLASS": "core.openapi.DocketAutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # A service's ValidationError is 400 by field, its StateConflict 409: once, for every view.
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    # Rate limits, counted in the cache (CACHE_URL: shared by all workers): per scheduler client (token) and per
    # person (all their tokens and their session together). Over the rate: 429, Retry-After and a JSON detail.
    "DEFAULT_THROTTLE_CLASSES": [
        "allocations.api.throttling.SchedulerRateThrottle",
        "committee.api.throttling.PersonRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "scheduler": env_rate("API_RATE_SCHEDULER", "600/minute"),
        "user": env_rate("API_RATE_USER", "120/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Docket API",
    "DESCRIPTION": "GPU allocation committee: requests, scores, decisions, windows and usage.",
    "VERSION": "1.3.1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "PATH_CONVERTER_OVERRIDES": {"week": {"type": "string", "pattern": WEEK_PATTERN}},
    "ENUM_NAME_OVERRIDES": {
        "ImpactKindEnum": "committee.models.ImpactKind",
        "CycleStatusEnum": "committee.models.CycleStatus",
        "RequestStatusEnum": "committee.models.RequestStatus",
        "DecisionOutcomeEnum": "committee.models.DecisionOutcome",
        "QuestionStatusEnum": "committee.models.QuestionStatus",
        "ChangedPartEnum": "committee.selectors.discussion.CHANGE_FIELDS",
        "PageKindEnum": "reports.models.PageKind",
        "ReasonCodeEnum": "allocations.explanations.REASON_CODES",
        "AgentActionKindEnum": "allocations.models.AgentActionKind",
    },
}

# Celery: without a broker, tasks run eagerly in-process so the app works with nothing else running.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = "memory://"  # eager: nothing is sent; names a transport so kombu does not warn
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis: a task taken by a worker that died without acknowledging it (acks_late) goes back to the
# queue after this many seconds. Keep it above the longest task's run time and any countdown.
# kombu looks for such tasks every unacked_restore_interval × unacked_restore_throttle seconds (10 × 10 by
# default, so 100 s whatever the timeout): look every quarter of the timeout, at most every 10 s, so a dead
# worker's task is taken over about one visibility timeout after it was taken. Every broker call has a
# connect and a read timeout, so a Redis that hangs holds no request or worker for good.
VISIBILITY_TIMEOUT_SECONDS = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)
CELERY_BROKER_CONNECTION_TIMEOUT = env_float("CELERY_BROKER_CONNECTION_TIMEOUT", 1.0, above=0, maximum=60)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": VISIBILITY_TIMEOUT_SECONDS,
    "unacked_restore_interval": max(1, min(10, VISIBILITY_TIMEOUT_SECONDS // 4)),
    "unacked_restore_throttle": 1,
    "socket_connect_timeout": CELERY_BROKER_CONNECTION_TIMEOUT,
    "socket_timeout": 15,  # above the 1 s of a worker's blocking poll
}
CELERY_TIMEZONE = TIME_ZONE
# The weekly clock (docs/operations.md): one tick, every DOCKET_CLOCK_TICK_SECONDS, does whatever is owed then
# (committee/calendar.py), so a run missed while the broker, a worker or beat was down happens at the next tick.
DOCKET_CLOCK_TICK_SECONDS = env_int("DOCKET_CLOCK_TICK_SECONDS", 60, minimum=1, maximum=3600)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    # A tick nobody ran within its period is dropped (the next one does its work).
    "clock-tick": {"task": "committee.clock_tick", "schedule": float(DOCKET_CLOCK_TICK_SECONDS),
                   "options": {"expires": max(DOCKET_CLOCK_TICK_SECONDS, 55)}},
    # Every minute; a relay nobody ran within the minute is dropped (the next one does its work).
    "relay-outbox": {"task": "committee.relay_outbox", "schedule": crontab(), "options": {"expires": 55}},
}

# Mail: the digest is Docket's notification channel, so every SMTP setting comes from the environment.
# EMAIL_TIMEOUT bounds each SMTP operation: a digest is sent inside its own transaction, and Django's default
# (no timeout) would let a mail server that stops answering hold that transaction for good.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "docket@localhost")
SERVER_EMAIL = env_str("SERVER_EMAIL", DEFAULT_FROM_EMAIL)
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)  # STARTTLS, usually port 587
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)  # TLS from the first byte, usually port 465
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS (STARTTLS) and EMAIL_USE_SSL (implicit TLS) exclude each other; set one.")
if bool(EMAIL_HOST_USER) != bool(EMAIL_HOST_PASSWORD):
    raise ImproperlyConfigured("EMAIL_HOST_USER and EMAIL_HOST_PASSWORD go together: set both or neither.")
EMAIL_TIMEOUT = env_float("EMAIL_TIMEOUT", 10.0, above=0, maximum=300)

# Chat: a Slack-compatible incoming webhook for "intake closes in 24 h", "published", "a window failed to sync".
DOCKET_CHAT_WEBHOOK_URL = (
    env_url("DOCKET_CHAT_WEBHOOK_URL", "") if env_str("DOCKET_CHAT_WEBHOOK_URL").strip() else ""
)
DOCKET_CHAT_TIMEOUT = env_float("DOCKET_CHAT_TIMEOUT", 5.0, above=0, maximum=60)
# Webhook receivers are typed by team leads: by default Docket refuses one whose host is (or resolves to) a loopback,
# private, link-local or reserved address, so a subscription cannot probe the network Docket runs in.
DOCKET_WEBHOOK_PRIVATE_ADDRESSES = env_bool("DOCKET_WEBHOOK_PRIVATE_ADDRESSES", False)

# Security: production defaults on unless DEBUG.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 60 * 60 * 12, minimum=60)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
# Preloading is off: Docket runs on a company's internal domain, and the browsers' preload list
# binds the whole registrable domain to HTTPS for good (hard to undo). check --deploy's W021 only
# says that preloading is off, so it is silenced while it is, and comes back if someone turns it on.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Docket's own knobs.
# A personal API token stops working this many days after it was made (the API answers 401 saying so).
DOCKET_TOKEN_MAX_AGE_DAYS = env_int("DOCKET_TOKEN_MAX_AGE_DAYS", 90, minimum=1, maximum=3650)
DOCKET_SCORE_QUORUM = env_int("DOCKET_SCORE_QUORUM", 2, minimum=1, maximum=50)
# Who records the committee's decisions on the review page and the API: the chair alone, or any member.
DOCKET_DECISIONS_RECORDED_BY = env_choice("DOCKET_DECISIONS_RECORDED_BY", "chair", ["chair", "committee"])
# The fair share decays past usage by 2^(−age / half-life): a half-life of 0 or less is no decay at all.
DOCKET_FAIRSHARE_HALF_LIFE_WEEKS = env_float("DOCKET_FAIRSHARE_HALF_LIFE_WEEKS", 2.0, above=0, maximum=520)
DOCKET_FAIRSHARE_TRAILING_WEEKS = env_int("DOCKET_FAIRSHARE_TRAILING_WEEKS", 8, minimum=1, maximum=520)
# How far back a scheduler's measured usage may start (days): older periods are refused with 400. The default
# covers the fair share's default 8 trailing weeks.
DOCKET_USAGE_MAX_AGE_DAYS = env_int("DOCKET_USAGE_MAX_AGE_DAYS", 56, minimum=1, maximum=3650)
# Reports of one team on one pool starting in one UTC hour: more is implausibly fragmented reporting, refused with
# 400. It bounds what a token can store (each report is checked against the pool's others under its row lock).
DOCKET_USAGE_MAX_REPORTS_PER_HOUR = env_int("DOCKET_USAGE_MAX_REPORTS_PER_HOUR", 60, minimum=1, maximum=3600)
# How long after a week's first publication its teams may appeal an outcome (hours; at most four weeks).
DOCKET_APPEAL_WINDOW_HOURS = env_int("DOCKET_APPEAL_WINDOW_HOURS", 48, minimum=1, maximum=672)
# A correction or an amendment in a published week keeps other teams' windows that have not started as they are
# (True), or places every window that has not started again (False); the chair chooses per correction.
DOCKET_CORRECTIONS_KEEP_OTHER_TEAMS = env_bool("DOCKET_CORRECTIONS_KEEP_OTHER_TEAMS", False)
# The unit of the monthly review's cost (GPU-hours × each pool's cost per GPU-hour).
DOCKET_COST_CURRENCY = env_str("DOCKET_COST_CURRENCY", "USD")
# The PDFs' charts are drawn by Chromium (reports/chart_printer.py); without it PDFs have no charts.
CHROMIUM_PATH = env_str("CHROMIUM_PATH", "/usr/bin/chromium")
# A process that made a PDF with charts keeps its Chromium (with plotly.js loaded) this long for the next one, then
# stops it; 0 stops it after each PDF. Chromium's start is about 1.5 s of a PDF's time; kept, it holds about 550 MB.
DOCKET_CHART_PRINTER_IDLE_SECONDS = env_int("DOCKET_CHART_PRINTER_IDLE_SECONDS", 300, minimum=0, maximum=86_400)
DOCKET_PDF_ROOT = Path(env_str("DOCKET_PDF_ROOT", str(MEDIA_ROOT / "archive-pdf")))
# How many processes lay a long decision record's PDF out at once (reports/print_pieces.py): one a core. 1 lays it
# out in the worker's own process.
DOCKET_PDF_WORKERS = env_int("DOCKET_PDF_WORKERS", min(2, os.cpu_count() or 1), minimum=1, maximum=16)

# The policy history (core/history.py): a change's reason may be longer than simple-history's default 100 characters.
SIMPLE_HISTORY_HISTORY_CHANGE_REASON_USE_TEXT_FIELD = True

# Logs: one line per record on stderr, with the request id (core/logs.py). LOG_FORMAT=json in production (one JSON
# object a line, for a log collector), text for `make run`. The Celery worker logs through the same configuration.
LOGGING = logging_config(
    log_format=env_choice("LOG_FORMAT", "text", ["text", "json"]),
    level=env_choice("LOG_LEVEL", "WARNING", ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]),
)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# /metrics (core/metrics.py): served to these networks (a direct, unproxied client) or to a bearer token only.
DOCKET_METRICS_ALLOWED_NETWORKS = env_networks("DOCKET_METRICS_ALLOWED_NETWORKS", ["127.0.0.1/32", "::1/128"])
DOCKET_METRICS_TOKEN = env_str("DOCKET_METRICS_TOKEN")
DOCKET_METRICS_COLLECTOR = "committee.metrics.DocketCollector"
# What /readyz adds to its checks, by name (core/health.py names no app): the weekly clock's due state.
DOCKET_READINESS_DETAILS = {"clock": "committee.selectors.clock_readiness"}
# Which build this is: docket_build_info on /metrics and the release Sentry files errors under.
DOCKET_RELEASE = env_str("DOCKET_RELEASE")

# Error reporting: only when SENTRY_DSN is set (without it sentry_sdk is not even imported). No personal data is sent.
SENTRY_DSN = env_str("SENTRY_DSN")
SENTRY_ENVIRONMENT = env_str("SENTRY_ENVIRONMENT", "production")
SENTRY_TRACES_SAMPLE_RATE = env_float("SENTRY_TRACES_SAMPLE_RATE", 0.0, minimum=0, maximum=1)
if SENTRY_DSN:
    from core.sentry import sentry_init

    sentry_init(
        dsn=SENTRY_DSN, release=DOCKET_RELEASE, environment=SENTRY_ENVIRONMENT,
        traces_sample_rate=SENTRY_TRACES_SAMPLE_RATE,
    )
