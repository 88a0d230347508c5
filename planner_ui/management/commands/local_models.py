"""`manage.py local_models`: serve the local models an admin asks for in the submission form.

`make run` runs this beside Daphne and the worker. Every second it compares what is wanted
with the llama.cpp servers it runs: it starts a wanted model on a free local port (through
agentsite.local_model, as AGENTSITE_LOCAL_MODEL does), marks it ready once /health answers,
stops a model no longer wanted, and records a server that died with the end of its log. On
SIGTERM it stops every server it started.
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DatabaseError, close_old_connections

from agentsite import embedded
from planner_ui.models import LocalModel
from planner_ui.services.local_models import (
    supervised_failed,
    supervised_loading,
    supervised_ready,
    supervised_stopped,
)

POLL_S = 1.0
# A model of a few GB loads in well under a minute from a local disk; past this, something
# is wrong (a full disk, a file that is not a model) and the log says what.
LOAD_TIMEOUT_S = 300.0


@dataclass
class Served:
    model_id: int
    name: str
    process: Any  # subprocess.Popen
    port: int
    log_path: Path
    started: float = field(default_factory=time.monotonic)
    ready: bool = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


class Supervisor:
    def __init__(self, log_dir: Path, extra: list[str]) -> None:
        self.log_dir = log_dir
        self.extra = extra
        self.served: dict[int, Served] = {}

    def adopt(self) -> None:
        """What an earlier supervisor left: its servers died with it. A wanted model is
        started again; the others are stopped."""
        LocalModel.objects.exclude(state=LocalModel.State.FAILED).filter(wanted=True).update(
            state=LocalModel.State.WAITING, base_url="", detail=""
        )
        LocalModel.objects.filter(wanted=False).exclude(
            state__in=[LocalModel.State.FAILED, LocalModel.State.STOPPED]
        ).update(state=LocalModel.State.STOPPED, base_url="")

    def tick(self) -> None:
        wanted = {m.pk: m for m in LocalModel.objects.filter(wanted=True)}
        for model_id, served in list(self.served.items()):
            if model_id not in wanted:
                self._stop(served, "stopped by an administrator")
            elif served.process.poll() is not None:
                del self.served[model_id]
                del wanted[model_id]  # until an admin asks again
                # Its last line says why (agentsite.local_model's own); the log has the rest.
                last = embedded.log_tail(served.log_path, lines=1).strip()
                supervised_failed(
                    model_id,
                    f"the server exited with code {served.process.returncode}"
                    + (f": {last}" if last else "")
                    + f" (see {served.log_path})",
                )
            elif not served.ready:
                self._check_loaded(served)
        for model_id, model in wanted.items():
            if model_id not in self.served:
                self._start(model)

    def stop_all(self) -> None:
        for served in list(self.served.values()):
            self._stop(served, "stopped with make run")

    def _start(self, model: LocalModel) -> None:
        path = Path(model.path)
        if not path.is_file():
            supervised_failed(model.pk, f"there is no file at {path}")
            return
        port = embedded.free_port()
        log_path = self.log_dir / f"model-{model.name}.log"
        process = embedded.start_local_model(
            path, port=port, log_path=log_path, extra=[*self.extra, "--alias", model.name]
        )
        served = Served(model.pk, model.name, process, port, log_path)
        self.served[model.pk] = served
        supervised_loading(model.pk, served.base_url)
        self.say(f"{model.name}: loading {path} on port {port} (log: {log_path})")

    def _check_loaded(self, served: Served) -> None:
        try:
            # llama.cpp's /health answers 503 while the model loads, then 200.
            embedded.wait_for_ok(f"http://127.0.0.1:{served.port}/health", timeout=0.2)
        except RuntimeError:
            if time.monotonic() - served.started > LOAD_TIMEOUT_S:
                self._stop(served, "")
                supervised_failed(
                    served.model_id,
                    f"it did not load within {LOAD_TIMEOUT_S:g} s (see {served.log_path})",
                )
            return
        served.ready = True
        supervised_ready(served.model_id)
        self.say(f"{served.name}: ready at {served.base_url}")

    def _stop(self, served: Served, why: str) -> None:
        embedded.stop_processes([served.process])
        self.served.pop(served.model_id, None)
        if why:
            supervised_stopped(served.model_id, why)
        self.say(f"{served.name}: stopped{f' ({why})' if why else ''}")

    def say(self, text: str) -> None:
        print(text, flush=True)


class Command(BaseCommand):
    help = "Serve the local models an admin asks for (make run runs this); stop them on exit."

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        log_dir = Path(settings.VAR_DIR) / "logs"
        # The same server options as AGENTSITE_LOCAL_MODEL's, e.g. "--ctx 32768 --seed 7".
        extra = shlex.split(os.environ.get("AGENTSITE_LOCAL_MODEL_ARGS", ""))
        supervisor = Supervisor(log_dir, extra)
        supervisor.adopt()
        try:
            while not stop.wait(POLL_S):
                try:
                    close_old_connections()
                    supervisor.tick()
                except DatabaseError as exc:
                    # A locked SQLite file or a database restarting: try again next second.
                    supervisor.say(f"database: {exc}")
        finally:
            supervisor.stop_all()
