"""The archive in the admin: readable by staff, never added to, changed or deleted, even by a superuser."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from reports.models import ArchiveChain, Page, PageRevision, PdfExport
from tests.reports.conftest import make_page


@pytest.fixture
def admin(client, world):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(get_user_model().objects.get(username="root"))
    make_page(world)
    PdfExport.objects.create(revision=PageRevision.objects.get(), requested_by_name="Chair")
    return client


@pytest.mark.parametrize("model", [Page, PageRevision, ArchiveChain, PdfExport])
def test_admin_reads_but_never_writes(admin, model):
    meta = model._meta
    obj = model.objects.first()
    changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    response = admin.get(changelist)
    assert response.status_code == 200
    assert "delete_selected" not in response.content.decode()
    assert admin.get(change).status_code == 200  # a read-only view
    assert admin.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add")).status_code == 403
    assert admin.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[obj.pk])).status_code == 403
    assert admin.post(change, {}).status_code == 403
    assert model.objects.filter(pk=obj.pk).exists()


def test_team_members_have_no_admin(client, world):
    client.force_login(world.member_a)
    response = client.get(reverse("admin:reports_pagerevision_changelist"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
