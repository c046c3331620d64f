from django.urls import path

from sso import views

urlpatterns = [
    path("authenticate/", views.SignInStartView.as_view(), name="oidc_authentication_init"),
    path("callback/", views.SignInCallbackView.as_view(), name="oidc_authentication_callback"),
]
