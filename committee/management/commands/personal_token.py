from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from committee import services
from committee.management.arguments import user_named


class Command(BaseCommand):
    help = (
        "Create a personal API token for a user and print it once (send it as 'Authorization: Token <token>'). "
        "With --revoke, delete the user's token of that name."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--user", required=True, help="username the token acts as")
        parser.add_argument("--name", required=True, help="a label for the token, e.g. the script using it")
        parser.add_argument("--revoke", action="store_true", help="delete the token with this name instead")

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_named(options["user"])
        if options["revoke"]:
            if not services.personal_token_revoke(user=user, name=options["name"]):
                raise CommandError(f"{user.get_username()} has no token named {options['name']!r}.")
            self.stdout.write(self.style.SUCCESS(f"Token {options['name']!r} of {user.get_username()} revoked."))
            return
        try:
            row, token = services.personal_token_create(user=user, name=options["name"])
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        until = row.expires_at.strftime("%Y-%m-%d")
        self.stderr.write(f"Token {options['name']!r} for {user.get_username()}, working until {until}; "
                          "copy it now, it is not shown again:")
        self.stdout.write(token)
