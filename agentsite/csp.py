"""The Content-Security-Policy of every response, with this site's own WebSocket named in it.

`connect-src 'self'` already covers ws:/wss: of the same host and port in browsers that follow
CSP level 3; older ones (Safari before 15.4) read 'self' as http(s) only, so the socket's
origin is named too. The policy names the host the browser asked for (checked against
ALLOWED_HOSTS) and the scheme of the connection it came over, like the WebSocket's origin
check (agentsite.origins)."""

from __future__ import annotations

from csp.middleware import CSPMiddleware, PolicyParts
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase


class SitePolicyMiddleware(CSPMiddleware):
    def get_policy_parts(
        self, request: HttpRequest, response: HttpResponseBase, report_only: bool = False
    ) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        try:
            host = request.get_host()
        except DisallowedHost:
            return parts  # refused already (400): 'self' alone
        socket = f"{'wss' if request.is_secure() else 'ws'}://{host}"
        parts.update = {**(parts.update or {}), "connect-src": [socket]}
        return parts
