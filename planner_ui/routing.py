from django.urls import path

from .consumers import InboxConsumer, RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/inbox/", InboxConsumer.as_asgi()),
]
