"""The Celery app; workers start with `celery -A agentsite worker`."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

app = Celery("agentsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
