from django.urls import path

from allocations import views

app_name = "allocations"

urlpatterns = [
    path("windows/", views.window_list, name="windows"),
]
