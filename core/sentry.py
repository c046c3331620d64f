"""Error reporting to Sentry, set up from config/settings.py only when SENTRY_DSN is set.

Imported only then, so a site without Sentry never loads sentry_sdk. Errors in views (Django
integration) and in tasks (Celery integration) are sent with the release and environment; no
personal data (`send_default_pii=False`: no user names, addresses, cookies or request bodies).
Each event is tagged with Docket's request id, so an error in Sentry and the log lines of the same
request can be found from each other.
"""

from __future__ import annotations

from typing import Any

import sentry_sdk
from sentry_sdk.integrations.celery import CeleryIntegration
from sentry_sdk.integrations.django import DjangoIntegration


def _tag_request_id(event: dict[str, Any], hint: dict[str, Any]) -> dict[str, Any]:
    from core.logs import current_request_id

    request_id = current_request_id()
    if request_id:
        event.setdefault("tags", {})["request_id"] = request_id
    return event


def sentry_init(*, dsn: str, release: str, environment: str, traces_sample_rate: float) -> None:
    sentry_sdk.init(
        dsn=dsn,
        release=release or None,
        environment=environment,
        send_default_pii=False,
        traces_sample_rate=traces_sample_rate,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        before_send=_tag_request_id,  # type: ignore[arg-type]
    )
