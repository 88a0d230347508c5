import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (needs Django set up)
from django.urls import get_resolver  # noqa: E402

from agentsite.heap import heap_freeze  # noqa: E402
from agentsite.origins import ExactOriginValidator  # noqa: E402
from planner_ui.api.websocket import TokenAuthMiddleware  # noqa: E402
from planner_ui.routing import websocket_urlpatterns  # noqa: E402
from planner_ui.websocket_session import websocket_auth_stack  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": ExactOriginValidator(
            websocket_auth_stack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns)))
        ),
    }
)

# The views, imported by the first request otherwise, are loaded now and frozen with the rest.
_views = get_resolver().url_patterns
heap_freeze()
