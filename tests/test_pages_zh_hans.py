"""The pages in Simplified Chinese: the footer's language switch, and the portal and the review read in zh-hans.

Dates and numbers come from Django's zh_Hans locale (core/formats/ adds thousands separators), the words from
locale/zh_Hans.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.committee.reviewing import close, score
from tests.conftest import committed
from tests.factories import file_request

SET_LANGUAGE = "/i18n/setlang/"
WEEKDAYS = "一二三四五六日"


def choose(client: Client, language: str, next_url: str = "/requests/") -> Any:
    return client.post(SET_LANGUAGE, {"language": language, "next": next_url})


def chinese_datetime(moment: Any) -> str:
    """How a zh-hans page writes an instant: 2026年12月4日（星期五）17:00 UTC."""
    local = timezone.localtime(moment)
    return f"{local.year}年{local.month}月{local.day}日（星期{WEEKDAYS[local.weekday()]}）{local:%H:%M} {local:%Z}"


def test_every_page_footer_offers_each_language_in_its_own_name(client, world):
    page = client.get(reverse("login")).content.decode()
    assert f'action="{SET_LANGUAGE}"' in page
    options = re.findall(r'<option value="([^"]+)" lang="[^"]+"( selected)?>([^<]+)</option>', page)
    assert options == [("en", " selected", "English"), ("zh-hans", "", "简体中文")]
    assert '<html lang="en"' in page


def test_choosing_chinese_is_remembered_for_a_year_and_the_page_follows(client, world):
    response = choose(client, "zh-hans", reverse("login"))
    assert response.status_code == 302 and response["Location"] == reverse("login")
    cookie = response.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "zh-hans"
    assert int(cookie["max-age"]) == 365 * 24 * 3600 and cookie["httponly"] and cookie["samesite"] == "Lax"
    page = client.get(reverse("login")).content.decode()
    assert '<html lang="zh-hans"' in page
    assert '<button type="submit">登录</button>' in page and "Sign in" not in page
    assert '<option value="zh-hans" lang="zh-hans" selected>简体中文</option>' in page
    # And back: the same switch returns to English.
    choose(client, "en", reverse("login"))
    assert '<button type="submit">Sign in</button>' in client.get(reverse("login")).content.decode()


def test_an_unknown_language_or_a_foreign_next_page_is_refused(client, world):
    response = choose(client, "xx", reverse("login"))
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies
    assert '<html lang="en"' in client.get(reverse("login")).content.decode()
    response = choose(client, "zh-hans", "https://elsewhere.example/")
    assert response.status_code == 302 and response["Location"] == "/"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"


def test_the_switch_is_a_plain_form_that_needs_no_script(client, world):
    """It works without JavaScript (the CSP allows no inline script anyway): a select and a submit button."""
    client.force_login(world.lead_a)
    page = client.get(reverse("committee:portal")).content.decode()
    form = re.search(r'<form method="post" action="/i18n/setlang/".*?</form>', page, re.S)
    assert form is not None
    assert 'name="csrfmiddlewaretoken"' in form.group(0)
    assert '<input type="hidden" name="next" value="/requests/">' in form.group(0)
    assert '<button type="submit"' in form.group(0) and "onchange" not in form.group(0)


def test_a_browser_asking_for_chinese_gets_it_before_any_choice(client, world):
    page = client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.5").content.decode()
    assert '<html lang="zh-hans"' in page and "登录" in page
    choose(client, "en", reverse("login"))
    page = client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert '<html lang="en"' in page  # the person's choice wins over the browser's


def test_the_portal_in_chinese_for_a_team_lead_who_chose_it(client, world):
    file_request(world, gpu_count=32, duration_hours=48)
    client.force_login(world.lead_a)
    choose(client, "zh-hans")
    page = client.get(reverse("committee:portal")).content.decode()
    assert '<html lang="zh-hans"' in page
    for words in ("我的团队的 GPU 申请", "提交申请", "结果：已决定 → 已排入", "退出登录 lead_a"):
        assert words in page, words
    closes = chinese_datetime(world.cycle.intake_closes_at)
    assert f"{world.cycle.week} 周的受理开放至 {closes}。" in page
    for english in ("My team's GPU requests", "File a request", "Intake for week", "Sign out"):
        assert english not in page, english


def test_the_review_page_in_chinese_for_the_chair_who_chose_it(client, world):
    big = file_request(world, gpu_count=32, duration_hours=48, title="Ranker retrain")  # 1,536 GPU-hours
    file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8, min_gpu_count=4)
    close(world)
    score(world.reviewer, big, 7, 6, 5)
    client.force_login(world.chair)
    choose(client, "zh-hans", "/review/")
    page = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert '<html lang="zh-hans"' in page
    for words in (f"每周评审：{world.cycle.week} 周", "需求与容量对比", "优先级矩阵", "评分细则版本", "证据材料",
                  "业务影响", "替代方案可行性", "时间紧迫性", "公平性（计算得出）", "保存"):
        assert words in page, words
    assert "1,536" in page  # thousands separated, as core/formats/zh_Hans writes them
    for english in ("Weekly review", "Demand against capacity", "Priority matrix", "Evidence", "Business impact"):
        assert english not in page, english


def test_a_date_on_a_chinese_page_comes_from_the_zh_hans_format(client, world):
    """The archive's revision times are written by |when; in zh-hans that is 2026年12月2日（星期三）10:00 UTC."""
    file_request(world)
    close(world)
    from committee.services import cycle_finalize

    committed(cycle_finalize, cycle=world.cycle, actor=world.chair)  # the record is written after commit
    client.force_login(world.chair)
    choose(client, "zh-hans", "/archive/")
    page = client.get(reverse("reports:index")).content.decode()
    now = timezone.localtime()
    assert re.search(rf"{now.year}年{now.month}月{now.day}日（星期{WEEKDAYS[now.weekday()]}）\d\d:\d\d UTC", page)
    assert "p.m." not in page and "a.m." not in page


def test_chinese_is_not_left_on_for_the_next_request_of_someone_else(client, world):
    """The language is per browser: another client without the cookie reads English."""
    client.force_login(world.chair)
    choose(client, "zh-hans")
    other = Client()
    other.force_login(world.lead_a)
    assert "My team's GPU requests" in other.get(reverse("committee:portal")).content.decode()
    assert "我的团队的 GPU 申请" in client.get(reverse("committee:portal")).content.decode()


def test_a_request_history_names_each_step_in_the_readers_language(client, world):
    gpu_request = file_request(world)
    client.force_login(world.lead_a)
    url = reverse("committee:request-detail", args=[gpu_request.pk])
    history = re.search(r"<ol>(.*?)</ol>", client.get(url).content.decode(), re.S)
    assert history is not None and ": created" in history.group(1) and ": submitted" in history.group(1)
    choose(client, "zh-hans", url)
    history = re.search(r"<ol>(.*?)</ol>", client.get(url).content.decode(), re.S)
    assert history is not None and ": 创建" in history.group(1) and ": 提交" in history.group(1)
    assert "created" not in history.group(1)
