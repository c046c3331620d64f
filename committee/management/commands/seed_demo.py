from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from committee.demo import DEMO_PASSWORD, DEMO_SCHEDULER_TOKENS, seed_demo
from committee.weeks import current_week_label


class Command(BaseCommand):
    help = "Fill the database with a believable demo. Running it again changes nothing; --reset starts over."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--i-know-this-is-not-production", action="store_true", dest="not_production",
            help="seed even though DEBUG is off (a staging copy, a demo server nobody relies on)",
        )
        parser.add_argument(
            "--reset", action="store_true",
            help="erase EVERY row of the database first (manage.py flush), then seed: the demo as on its first day",
        )

    def handle(self, *args: object, **options: object) -> None:
        # DEBUG off is how a production deployment runs; the demo's accounts and tokens are public.
        if not settings.DEBUG and not options["not_production"]:
            raise CommandError(
                "Refusing to seed the demo with DEBUG off: it creates accounts whose password is published "
                f"({DEMO_PASSWORD!r}) and scheduler tokens printed in the docs, and anyone could sign in with "
                "them. Run it with DEBUG=1 (make run does), or pass --i-know-this-is-not-production on a site "
                "nobody relies on. `manage.py check --deploy` fails while demo accounts or tokens exist."
            )
        if options["reset"]:
            call_command("flush", interactive=False, verbosity=0)
            self.stdout.write("Database erased.")
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
