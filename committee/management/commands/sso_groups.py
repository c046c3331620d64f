"""Single sign-on groups kept in a file: `sso_groups export` prints them, `sso_groups apply FILE` sets them.

For a platform team that keeps configuration in version control instead of typing it into the admin:

    python manage.py sso_groups export > sso-groups.yaml
    python manage.py sso_groups apply sso-groups.yaml --prune      # - reads standard input
"""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError

from committee import services


class Command(BaseCommand):
    help = "Print the single sign-on groups as YAML (export), or make them what a YAML or JSON file says (apply)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        actions.add_parser("export", help="print every group mapping as a group map file")
        apply = actions.add_parser("apply", help="add and update the mappings a file lists")
        apply.add_argument("file", help="a YAML (or JSON) list of {group, team, role, seat, department}; "
                                        "- for standard input")
        apply.add_argument("--prune", action="store_true", help="also remove the mappings the file does not list")
        apply.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "export":
            self.stdout.write(yaml.safe_dump(services.sso_group_map_rows(), sort_keys=False, allow_unicode=True))
            return
        path = options["file"]
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
            entries = services.sso_group_map_parse(yaml.safe_load(text))
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror}") from None
        except yaml.YAMLError as error:
            raise CommandError(f"{path} is not YAML: {error}") from None
        except ValueError as error:
            raise CommandError(f"{path}: nothing changed: {error}") from None
        result = services.sso_group_map_apply(entries=entries, prune=options["prune"], dry_run=options["dry_run"])
        for label, rows in (("added", result.added), ("changed", result.changed), ("removed", result.removed)):
            for row in rows:
                self.stdout.write(f"{label}: {row}")
        summary = (f"{len(result.added)} added, {len(result.changed)} changed, {len(result.removed)} removed, "
                   f"{result.unchanged} unchanged")
        self.stdout.write(self.style.SUCCESS(f"{summary} (dry run: nothing saved)." if options["dry_run"]
                                             else f"{summary}."))
