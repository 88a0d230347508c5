from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from planner_ui.api import api
from planner_ui.views import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("planner_ui.urls")),
]
