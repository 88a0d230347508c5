"""Local models an admin starts from the submission form: what is asked for, and what `make
run`'s model supervisor (manage.py local_models) reports back as it starts and stops them.

A started model is reached by the route `local:<name>`, through the OpenAI-compatible provider
at the address the supervisor wrote. Only staff may ask: the file is read, and a server
started, on the machine that runs `make run`."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from planner_ui.core.errors import AgentError
from planner_ui.models import LocalModel

# A model id (and so a route) is the file's stem; routes allow no spaces and 150 characters.
MAX_NAME = 150
GGUF_MAGIC = b"GGUF"  # the first bytes of every GGUF file


class LocalModelRefused(AgentError):
    """A request about a local model was refused; the message says why."""


def local_model_start(*, user: User, path: str, default_route: bool = False) -> LocalModel:
    """Ask for the GGUF file at `path` to be served (again); `default_route` makes new runs
    use it for every part."""
    if not user.is_staff:
        raise LocalModelRefused(
            "Only an administrator can start a local model: it loads a file and runs a server "
            "on the machine agentsite runs on."
        )
    try:
        file = Path(path.strip()).expanduser()
    except RuntimeError:  # "~someone/..." of a user this machine does not have
        raise LocalModelRefused(
            f"{path.strip()[:200]} names the home of a user this machine does not have: "
            "give the full path, starting with /."
        ) from None
    if not path.strip() or file.suffix.lower() != ".gguf":
        raise LocalModelRefused(
            "Give the full path of a .gguf file, e.g. /home/me/models/qwen2.5-1.5b-instruct"
            "-q4_k_m.gguf."
        )
    if not file.is_absolute():
        raise LocalModelRefused(f"{path.strip()} is not a full path: start it with /.")
    if not file.is_file():
        raise LocalModelRefused(f"There is no file at {file} on this machine.")
    with file.open("rb") as head:
        if head.read(4) != GGUF_MAGIC:
            raise LocalModelRefused(f"{file} is not a GGUF model: it does not begin with GGUF.")
    name = file.stem
    if len(name) > MAX_NAME or any(c.isspace() for c in name):
        raise LocalModelRefused(
            f"The file's name {name[:60]!r} cannot be a model id: rename it without spaces, "
            f"at most {MAX_NAME} characters."
        )
    with transaction.atomic():
        clash = LocalModel.objects.filter(name=name).exclude(path=str(file)).first()
        if clash is not None:
            raise LocalModelRefused(
                f"Another file with the name {name} is a local model already ({clash.path}); "
                "rename one of them."
            )
        model, created = LocalModel.objects.get_or_create(
            path=str(file), defaults={"name": name, "requested_by": user}
        )
        if not created and not model.wanted:
            model.wanted = True
            model.state = LocalModel.State.WAITING
            model.base_url = model.detail = ""
            model.requested_by = user
        if default_route:
            LocalModel.objects.exclude(pk=model.pk).update(default_route=False)
        model.default_route = default_route
        model.save()
    return model


def local_model_stop(*, user: User, model_id: int) -> LocalModel:
    """Ask for a model to be stopped; the supervisor stops its server and says so. Runs that
    route to it fail their next call to it, saying it is not running."""
    if not user.is_staff:
        raise LocalModelRefused("Only an administrator can stop a local model.")
    model = LocalModel.objects.filter(pk=model_id).first()
    if model is None:
        raise LocalModelRefused("There is no such local model.")
    model.wanted = False
    model.default_route = False
    model.save(update_fields=["wanted", "default_route", "updated_at"])
    return model


def local_model_url(name: str) -> str:
    """Where the local model `name` answers, or LocalModelRefused saying why it does not."""
    model = LocalModel.objects.filter(name=name).first()
    if model is None:
        raise LocalModelRefused(
            f"local:{name} is not a local model here: an administrator starts one in the "
            "form's 'Models and budget' section."
        )
    if model.state != LocalModel.State.READY or not model.base_url:
        detail = f" ({model.detail})" if model.detail else ""
        raise LocalModelRefused(f"local:{name} is not running: it is {model.state}{detail}.")
    return model.base_url


# What the supervisor reports. Each writes only the state it owns, so an admin's "stop" in
# between is never overwritten.


def supervised_loading(model_id: int, base_url: str) -> None:
    LocalModel.objects.filter(pk=model_id).update(
        state=LocalModel.State.LOADING, base_url=base_url, detail=""
    )


def supervised_ready(model_id: int) -> None:
    LocalModel.objects.filter(pk=model_id, wanted=True).update(state=LocalModel.State.READY)


def supervised_failed(model_id: int, detail: str) -> None:
    # Not wanted again until an admin starts it again: a file that fails to load would
    # otherwise be loaded over and over.
    LocalModel.objects.filter(pk=model_id).update(
        state=LocalModel.State.FAILED, wanted=False, base_url="", detail=detail[:2000]
    )


def supervised_stopped(model_id: int, detail: str = "") -> None:
    LocalModel.objects.filter(pk=model_id).update(
        state=LocalModel.State.STOPPED, base_url="", detail=detail
    )
