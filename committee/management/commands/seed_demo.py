from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from committee.demo import DEMO_PASSWORD, DEMO_SCHEDULER_TOKENS, seed_demo
from committee.weeks import current_week_label


class Command(BaseCommand):
    help = "Fill the database with a believable demo. Running it again changes nothing."

    def handle(self, *args: object, **options: object) -> None:
        logins = seed_demo()
        self.stdout.write(self.style.SUCCESS("Demo data ready."))
        self.stdout.write(f"Demo logins (password for all: {DEMO_PASSWORD}):")
        width = max(len(name) for name, _ in logins)
        for name, what in logins:
            self.stdout.write(f"  {name.ljust(width)}  {what}")
        self.stdout.write("Scheduler tokens (DEMO ONLY, publicly known; real ones: manage.py scheduler_token):")
        for cluster, token in DEMO_SCHEDULER_TOKENS.items():
            self.stdout.write(f"  {cluster}  {token}")
        cluster, token = next(iter(DEMO_SCHEDULER_TOKENS.items()))
        url = f"{settings.SITE_URL}/api/v1/windows/?cluster={cluster}&week={current_week_label(timezone.now())}"
        self.stdout.write(f"  try: curl -i -H 'Authorization: Bearer {token}' '{url}'")
