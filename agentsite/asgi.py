import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (needs Django set up)

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

if "daphne.server" in sys.modules:  # served by Daphne, not another ASGI server
    from agentsite.frame_writes import frame_writes_cheaper

    frame_writes_cheaper()

heap_freeze(views=True)
