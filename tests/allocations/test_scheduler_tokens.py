"""Scheduler clients: tokens issued once, stored hashed, bound to one cluster, revocable."""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.messages import get_messages
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from allocations import services
from allocations.models import SchedulerClient
from tests.allocations.plans import bearer


def test_token_is_stored_only_as_its_hash(world):
    issued = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync")
    client = SchedulerClient.objects.get(pk=issued.client.pk)
    assert issued.token.startswith("dks_") and len(issued.token) >= 40
    assert client.token_hash == hashlib.sha256(issued.token.encode()).hexdigest()
    assert issued.token not in {getattr(client, f.attname) for f in SchedulerClient._meta.concrete_fields}
    assert client.token_prefix == issued.token[:12]


def test_names_are_unique_per_cluster(world):
    services.scheduler_client_create(cluster=world.atlas, name="slurm-sync")
    services.scheduler_client_create(cluster=world.orion, name="slurm-sync")
    with pytest.raises(Exception, match="already has a scheduler"):
        services.scheduler_client_create(cluster=world.atlas, name="slurm-sync")


def test_command_prints_the_token_once_and_it_works(world, capsys):
    call_command("scheduler_token", cluster="atlas", name="slurm-sync")
    captured = capsys.readouterr()
    token = captured.out.strip()
    assert token.startswith("dks_") and "shown this once" in captured.err
    response = APIClient().get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(token))
    assert response.status_code == 200
    assert SchedulerClient.objects.get(name="slurm-sync").last_seen_at is not None


def test_command_refuses_unknown_cluster_and_taken_name(world):
    with pytest.raises(CommandError, match="No cluster"):
        call_command("scheduler_token", cluster="nowhere", name="x")
    call_command("scheduler_token", cluster="atlas", name="x")
    with pytest.raises(CommandError, match="already has"):
        call_command("scheduler_token", cluster="atlas", name="x")


def test_rotating_replaces_the_token(world, capsys):
    old = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    call_command("scheduler_token", cluster="atlas", name="slurm-sync", rotate=True)
    new = capsys.readouterr().out.strip()
    api = APIClient()
    assert api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(old)).status_code == 401
    assert api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(new)).status_code == 200


def test_other_bearer_tokens_are_left_to_other_authentication(world):
    # Not a scheduler token (no dks_ prefix): this class steps aside instead of failing the request.
    response = APIClient().get("/api/v1/windows/", {"cluster": "atlas"}, HTTP_AUTHORIZATION="Bearer something-else")
    assert response.status_code == 401


def test_admin_adds_a_scheduler_and_shows_its_token_once(world, client):
    from django.contrib.auth import get_user_model

    admin_user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin_user)
    response = client.post(
        "/admin/allocations/schedulerclient/add/", {"cluster": world.atlas.pk, "name": "kueue-export"}
    )
    assert response.status_code == 302
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    token = next(word for m in shown for word in m.split() if word.startswith("dks_"))
    stored = SchedulerClient.objects.get(name="kueue-export")
    assert stored.token_hash == hashlib.sha256(token.encode()).hexdigest()
    first = client.get(response["Location"])  # the page after adding shows the token ...
    assert token in first.content.decode()
    again = client.get(f"/admin/allocations/schedulerclient/{stored.pk}/change/")  # ... and no page after it
    assert again.status_code == 200 and token not in again.content.decode()


def test_rotating_with_an_overlap_keeps_the_old_token_until_it_ends(world, pinned, capsys):
    from datetime import timedelta

    from tests.clock import FIXED_NOW

    old = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    call_command("scheduler_token", cluster="atlas", name="slurm-sync", rotate=True, overlap_hours=24)
    captured = capsys.readouterr()
    new = captured.out.strip()
    assert "The old token keeps working until 2026-12-03 10:00 UTC." in captured.err
    api = APIClient()

    def status(token: str) -> int:
        return api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(token)).status_code

    assert status(new) == 200 and status(old) == 200
    pinned.move_to(FIXED_NOW + timedelta(hours=24))
    assert status(new) == 200 and status(old) == 401
    # The next rotation ends any overlap still running: only the token it replaces overlaps.
    call_command("scheduler_token", cluster="atlas", name="slurm-sync", rotate=True, overlap_hours=1)
    newer = capsys.readouterr().out.strip()
    assert status(newer) == 200 and status(new) == 200 and status(old) == 401


def test_overlap_hours_out_of_range_or_without_rotate_are_refused(world):
    services.scheduler_client_create(cluster=world.atlas, name="slurm-sync")
    before = SchedulerClient.objects.get().token_hash
    with pytest.raises(CommandError, match="between 0 and 720"):
        call_command("scheduler_token", cluster="atlas", name="slurm-sync", rotate=True, overlap_hours=-1)
    with pytest.raises(CommandError, match="goes with --rotate"):
        call_command("scheduler_token", cluster="atlas", name="other", overlap_hours=5)
    assert SchedulerClient.objects.get().token_hash == before and SchedulerClient.objects.count() == 1


def test_the_admin_rotates_with_a_24_hour_overlap(world, client):
    from django.contrib.auth.models import User

    old = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    row = SchedulerClient.objects.get()
    response = client.post("/admin/allocations/schedulerclient/", {
        "action": "issue_new_token_with_overlap", "_selected_action": [row.pk]}, follow=True)
    token_message = next(str(m) for m in get_messages(response.wsgi_request) if "copy it now" in str(m))
    new = token_message.split(": ", 1)[1].split(" ")[0]
    api = APIClient()
    assert api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(new)).status_code == 200
    assert api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(old)).status_code == 200
    row.refresh_from_db()
    assert row.previous_token_expires_at is not None
