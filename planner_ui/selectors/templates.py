"""Reads of plan templates: a person sees their own and the shared ones (read-only); staff see
every one, to decide which to share."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from django.contrib.auth.models import User
from django.db.models import Count, Max, Q, QuerySet
from django.shortcuts import get_object_or_404

from planner_ui.models import PlanTemplate, PlanTemplateVersion, Run

if TYPE_CHECKING:  # django-stubs' own helper; only the type checker needs it
    from django_stubs_ext import WithAnnotations


class TemplateCounts(TypedDict):
    """What template_list_for_user annotates each template with."""

    latest_number: int | None
    run_count: int


def _visible(user: User) -> Q:
    if user.is_staff:
        return Q()  # staff decide what is shared, so they see what there is to share
    return Q(owner_id=user.pk) | Q(shared=True)


def template_list_for_user(
    user: User,
) -> QuerySet[WithAnnotations[PlanTemplate, TemplateCounts]]:
    """The person's templates and the shared ones, by name, with their latest version's number
    and how many of the person's own runs came from them."""
    return (
        PlanTemplate.objects.filter(_visible(user))
        .select_related("owner")
        .annotate(
            latest_number=Max("versions__number"),
            run_count=Count(
                "versions__runs", filter=Q(versions__runs__owner_id=user.pk), distinct=True
            ),
        )
        .order_by("name", "id")
    )


def template_get_for_user(user: User, template_id: int) -> PlanTemplate:
    """The template if the person may see it, or 404 (another's unshared one looks missing)."""
    return get_object_or_404(
        PlanTemplate.objects.select_related("owner").filter(_visible(user)), pk=template_id
    )


def template_get_owned(user: User, template_id: int) -> PlanTemplate:
    """The person's own template, to change, or 404: a shared one is theirs to run only."""
    return get_object_or_404(PlanTemplate, pk=template_id, owner_id=user.pk)


def template_get_by_name(user: User, name: str) -> PlanTemplate:
    """The person's template of this name, else the one shared template of it; DoesNotExist
    otherwise (none, or several people shared one of that name)."""
    # Not every template staff may see: a name means one's own or a shared one.
    found = PlanTemplate.objects.filter(Q(owner_id=user.pk) | Q(shared=True), name=name)
    own = found.filter(owner_id=user.pk).first()
    if own is not None:
        return own
    shared = list(found.order_by("id")[:2])
    if len(shared) == 1:
        return shared[0]
    why = "several shared templates have" if shared else "no template you may see has"
    raise PlanTemplate.DoesNotExist(f"{why} the name {name!r}")


def template_version(template: PlanTemplate, number: int | None = None) -> PlanTemplateVersion:
    """A version of the template: `number`, or the latest; DoesNotExist if it has none such."""
    versions = template.versions.all()
    if number is None:
        found = versions.order_by("-number").first()
        if found is None:
            raise PlanTemplateVersion.DoesNotExist
        return found
    return versions.get(number=number)


def template_runs_for_user(template: PlanTemplate, user: User) -> QuerySet[Run]:
    """The person's own runs started from any version of the template, newest first: on a
    shared template, other people's runs stay theirs."""
    return (
        Run.objects.filter(template_version__template=template, owner_id=user.pk)
        .select_related("template_version")
        .order_by("-created_at", "-id")
    )
