"""The windows page: a week's published plan, each window with its scheduler's latest sync status."""

from __future__ import annotations

from allocations import services
from allocations.models import SyncState
from tests.allocations.plans import W, publish, this_week


def test_people_see_the_current_plan_with_sync_status(world, client):
    plan = publish([W(world.a100, world.team_a, 16, 8, 56, ref=1, tier="priority"),
                    W(world.h100, world.team_b, 8, 0, 24, ref=2)])
    window = plan.windows.get(request_ref=1)
    sync = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").client
    services.sync_status_record(client=sync, statuses=[{
        "window": window.pk, "state": SyncState.SHORT, "nodes_requested": 2, "nodes_reserved": 1,
        "message": "short by 1 node: gpu03 is down"}])
    client.force_login(world.member_b)
    page = client.get("/windows/")
    html = page.content.decode()
    assert page.status_code == 200
    assert f'id="window-{window.pk}"' in html and "short by 1 node: gpu03 is down" in html
    assert "Team A" in html and "Team B" in html and "not reported yet" in html
    assert 'id="superseded"' not in html


def test_an_old_version_says_it_is_superseded_and_what_was_withdrawn(world, client):
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)])
    second = publish([W(world.a100, world.team_a, 8, 8, 56, ref=1)], note="Corrected: team A asked for 8.")
    client.force_login(world.chair)
    old = client.get("/windows/", {"week": this_week(), "version": 1}).content.decode()
    assert 'id="superseded"' in old and "version 2" in old
    new = client.get("/windows/", {"week": this_week()}).content.decode()
    assert "Corrected: team A asked for 8." in new and "Withdrawn by version 2" in new
    assert second.version == 2


def test_anonymous_is_sent_to_sign_in_and_unknown_weeks_are_404(world, client):
    assert client.get("/windows/").status_code == 302
    client.force_login(world.outsider)
    assert client.get("/windows/").status_code == 200  # nothing published yet: says so
    assert client.get("/windows/", {"week": "2031-W01"}).status_code == 404
    assert client.get("/windows/", {"week": this_week(), "version": "x"}).status_code == 404


def test_a_department_or_a_team_narrows_the_windows_and_stays_on_the_links(world, client):
    from allocations.models import Department

    research = Department.objects.create(name="Research", slug="research")
    world.team_b.department = research
    world.team_b.save()
    plan = publish([W(world.a100, world.team_a, 16, 8, 56, ref=1), W(world.h100, world.team_b, 8, 0, 24, ref=2)])
    a_window, b_window = plan.windows.get(request_ref=1), plan.windows.get(request_ref=2)
    client.force_login(world.member_a)
    html = client.get("/windows/", {"department": "research"}).content.decode()
    assert f'id="window-{b_window.pk}"' in html and f'id="window-{a_window.pk}"' not in html
    assert f'href="?week={plan.week}&amp;department=research"' in html  # the week's link keeps the filter
    html = client.get("/windows/", {"week": plan.week, "team": "team-a"}).content.decode()
    assert f'id="window-{a_window.pk}"' in html and f'id="window-{b_window.pk}"' not in html
    # A team outside the department, or a department that does not exist: the error, and every window.
    for query, error in (({"department": "research", "team": "team-a"}, "This team is not in the chosen department."),
                         ({"department": "sales"}, "Select a valid choice")):
        page = client.get("/windows/", query)
        html = page.content.decode()
        assert page.status_code == 200 and error in html, query
        assert f'id="window-{a_window.pk}"' in html and f'id="window-{b_window.pk}"' in html
    html = client.get("/windows/", {"department": "research", "team": "team-b", "week": plan.week}).content.decode()
    assert f'id="window-{b_window.pk}"' in html and "This plan places no window" not in html
    html = client.get("/windows/", {"team": "team-a", "department": ""}).content.decode()
    assert f'id="window-{b_window.pk}"' not in html
    # A grant not placed has no window to narrow by: counted under a filter, listed without it.
    plan.explanations.filter(request_ref=1).update(placed=False, reasons=[], text="not placed: pool full")
    html = client.get("/windows/", {"department": "research"}).content.decode()
    assert "1 grant of this plan was not placed" in html and "pool full" not in html
    assert "pool full" in client.get("/windows/").content.decode()
