from django.core.management.base import BaseCommand

from committee.demo import DEMO_PASSWORD, seed_demo


class Command(BaseCommand):
    help = "Fill the database with a believable demo. Running it again changes nothing."

    def handle(self, *args: object, **options: object) -> None:
        logins = seed_demo()
        self.stdout.write(self.style.SUCCESS("Demo data ready."))
        self.stdout.write(f"Demo logins (password for all: {DEMO_PASSWORD}):")
        width = max(len(name) for name, _ in logins)
        for name, what in logins:
            self.stdout.write(f"  {name.ljust(width)}  {what}")
