from django.urls import path

from committee.views import portal

app_name = "committee"

urlpatterns = [
    path("requests/", portal.portal, name="portal"),
    path("requests/new/", portal.request_create, name="request-create"),
    path("requests/<int:pk>/", portal.request_detail, name="request-detail"),
    path("requests/<int:pk>/edit/", portal.request_edit, name="request-edit"),
    path("requests/<int:pk>/submit/", portal.request_submit, name="request-submit"),
    path("requests/<int:pk>/withdraw/", portal.request_withdraw, name="request-withdraw"),
]
