"""Settings for the test suite: config.settings with test-only defaults.

DATABASE_URL and CELERY_BROKER_URL still come from the environment, so CI runs the same suite on
PostgreSQL. Tasks run eagerly unless a test starts its own worker.
"""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-for-production-0123456789")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
os.environ.setdefault("STATIC_MANIFEST", "0")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
# The suite calls the API thousands of times a minute with one token (load tests, fuzzing); the rate limits
# themselves are tested with low rates in tests/test_api_throttling.py. Set in the environment, so the
# servers a test starts (gunicorn) get them too.
os.environ.setdefault("API_RATE_SCHEDULER", "1000000/minute")
os.environ.setdefault("API_RATE_USER", "1000000/minute")

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

# The suite's clock is pinned (tests/clock.py) but Chromium keeps the machine's: a cookie that expires two weeks
# after the pinned instant would already have expired for the browser on a later day. Cookies last for the
# browser session instead; tests/test_deploy_checks.py checks the production expiry with these switched back.
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
CSRF_COOKIE_AGE = None

# A test that starts its own Celery worker (tests/committee/test_outbox_redis.py) needs a test database that
# another process can open. PostgreSQL always is one; on SQLite, DOCKET_TEST_DB_FILE=1 puts the test database in
# a file instead of memory (pytest-django adds the xdist worker's suffix to the name).
if os.environ.get("DOCKET_TEST_DB_FILE") == "1" and DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    import hashlib
    import tempfile

    _checkout = hashlib.sha256(str(BASE_DIR).encode()).hexdigest()[:12]  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": f"{tempfile.gettempdir()}/docket-test-{_checkout}.sqlite3"}  # noqa: F405
