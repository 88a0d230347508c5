from django.urls import path

from .views import runs

urlpatterns = [
    path("", runs.home, name="home"),
    path("runs/", runs.run_list, name="run_list"),
    path("runs/new/", runs.run_new, name="run_new"),
    path("runs/<int:run_id>/", runs.run_detail, name="run_detail"),
    path("runs/<int:run_id>/approve/", runs.run_approve, name="run_approve"),
]
