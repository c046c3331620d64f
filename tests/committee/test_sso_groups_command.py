"""`manage.py sso_groups`: the single sign-on groups kept in a file, exported and applied."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from allocations.models import Department, Team
from committee import services
from committee.models import MembershipRole, SeatRole, SsoGroupMapping, TeamMembership

pytestmark = pytest.mark.django_db

MAP = """
- group: gpu-team-a
  team: team-a
- group: gpu-team-b-leads
  team: team-b
  role: lead
- group: gpu-committee-chair
  seat: chair
"""


def rows() -> set[tuple[str, str | None, str, str]]:
    return {(m.group, m.team.slug if m.team else None, m.team_role, m.seat_role)
            for m in SsoGroupMapping.objects.select_related("team")}


def apply(tmp_path: Path, text: str, *args: str) -> str:
    path = tmp_path / "groups.yaml"
    path.write_text(text)
    out = io.StringIO()
    call_command("sso_groups", "apply", str(path), *args, stdout=out)
    return out.getvalue()


def test_apply_adds_the_mappings_a_file_lists_and_a_second_run_changes_nothing(world, tmp_path):
    out = apply(tmp_path, MAP)
    assert "3 added, 0 changed, 0 removed, 0 unchanged." in out
    assert rows() == {("gpu-team-a", "team-a", "member", ""), ("gpu-team-b-leads", "team-b", "lead", ""),
                      ("gpu-committee-chair", None, "member", "chair")}
    assert "0 added, 0 changed, 0 removed, 3 unchanged." in apply(tmp_path, MAP)


def test_export_prints_a_file_that_applies_back_to_the_same_mappings(world, tmp_path):
    apply(tmp_path, MAP)
    out = io.StringIO()
    call_command("sso_groups", "export", stdout=out)
    exported = out.getvalue()
    assert yaml.safe_load(exported)[0] == {"group": "gpu-committee-chair", "seat": "chair"}
    before = rows()
    SsoGroupMapping.objects.all().delete()
    apply(tmp_path, exported)
    assert rows() == before


def test_a_changed_role_is_updated_in_place_and_prune_removes_what_the_file_no_longer_lists(world, tmp_path):
    apply(tmp_path, MAP)
    kept = SsoGroupMapping.objects.get(group="gpu-team-a").pk
    out = apply(tmp_path, "- {group: gpu-team-a, team: team-a, role: lead}\n", "--prune")
    assert "changed: gpu-team-a → team team-a (lead)" in out
    assert "removed: gpu-committee-chair → seat chair" in out
    assert rows() == {("gpu-team-a", "team-a", MembershipRole.LEAD, "")}
    assert SsoGroupMapping.objects.get(group="gpu-team-a").pk == kept


def test_without_prune_mappings_made_in_the_admin_stay(world, tmp_path):
    SsoGroupMapping.objects.create(group="made-by-hand", seat_role=SeatRole.FINANCE)
    apply(tmp_path, MAP)
    assert ("made-by-hand", None, "member", "finance") in rows()


def test_a_dry_run_says_what_would_change_and_saves_nothing(world, tmp_path):
    out = apply(tmp_path, MAP, "--dry-run")
    assert "added: gpu-team-b-leads → team team-b (lead)" in out and "dry run: nothing saved" in out
    assert rows() == set()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("group: x\n", "the group map is a list"),
        ("- {group: x, team: no-such-team}\n", "entry 1 (x): no team with the slug 'no-such-team'"),
        ("- {group: x}\n", "entry 1 (x): gives nothing"),
        ("- {group: x, seat: emperor}\n", "entry 1 (x): seat is one of"),
        ("- {group: x, team: team-a, role: boss}\n", "entry 1 (x): role is member or lead"),
        ("- {group: x, seat: chair, role: lead}\n", "role is member or lead, and only with a team"),
        ("- {group: '', team: team-a}\n", "entry 1: group must be a name"),
        ("- {group: x, team: team-a, colour: red}\n", "entry 1: unknown keys colour"),
        ("- {group: x, team: team-a}\n- {group: x, team: team-a, role: lead}\n", "x: team 'team-a' is given twice"),
        ("- [unclosed\n", "is not YAML"),
        ("- {group: x, team: team-a, department: no-such}\n", "department is the slug of a department"),
        ("- {group: x, seat: chair, department: research}\n", "department is the slug of a department"),
        ("- {group: x, team: team-a, department: research}\n- {group: y, team: team-a, department: product}\n",
         "team 'team-a' is put in two departments"),
    ],
)
def test_a_bad_file_is_refused_with_what_is_wrong_and_changes_nothing(world, tmp_path, text, message):
    SsoGroupMapping.objects.create(group="made-by-hand", seat_role=SeatRole.FINANCE)
    Department.objects.create(name="Research", slug="research")
    Department.objects.create(name="Product", slug="product")
    before = rows()
    with pytest.raises(CommandError) as refused:
        apply(tmp_path, text, "--prune")
    assert message in str(refused.value)
    assert rows() == before
    assert not Team.objects.filter(department__isnull=False).exists()


def test_the_file_puts_teams_into_departments_and_sign_in_puts_a_new_person_into_both(world, tmp_path):
    research = Department.objects.create(name="Research", slug="research", fair_share_weight=3)
    text = MAP.replace("  team: team-a\n", "  team: team-a\n  department: research\n", 1)
    out = apply(tmp_path, text)
    assert "changed: team team-a → department research" in out
    world.team_a.refresh_from_db()
    assert world.team_a.department == research
    assert world.team_a.history.latest().history_change_reason == "single sign-on group map file"
    assert "0 added, 0 changed, 0 removed, 3 unchanged." in apply(tmp_path, text)  # a second run changes nothing
    newcomer = get_user_model().objects.create_user("newcomer")
    services.sso_memberships_sync(user=newcomer, groups=["gpu-team-a"])
    (membership,) = TeamMembership.objects.filter(user=newcomer).select_related("team__department")
    assert (membership.team.slug, membership.team.department) == ("team-a", research)
    exported = io.StringIO()
    call_command("sso_groups", "export", stdout=exported)
    assert {"group": "gpu-team-a", "team": "team-a", "role": "member", "department": "research"} in yaml.safe_load(
        exported.getvalue())


def test_a_file_that_cannot_be_read_is_named(world, tmp_path):
    with pytest.raises(CommandError, match=r"cannot read .*missing\.yaml"):
        call_command("sso_groups", "apply", str(tmp_path / "missing.yaml"))
