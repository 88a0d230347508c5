"""Full-text search over models.SearchDocument, on either database: SQLite's FTS5 table (kept by
triggers, migration plan_library) or PostgreSQL's tsvector (a GIN index covers it). The words
come from core.search, so nothing a person types is query syntax on either.

Two uses: the closest plans to a task (the plan library a person may see and their own runs
that succeeded: never another person's private run), and the history's search box."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

from planner_ui.core.search import close_enough, fts5_query, search_terms, tsquery
from planner_ui.core.status import RunStatus
from planner_ui.models import PlanTemplateVersion, SearchDocument

FTS_TABLE = "planner_ui_search_fts"
# The candidates the database ranks first, re-checked here (core.search.close_enough).
CANDIDATES = 20


def matching(
    documents: QuerySet[SearchDocument],
    terms: list[str],
    *,
    match_all: bool,
    summary_only: bool = False,
    prefix_last: bool = False,
) -> QuerySet[SearchDocument]:
    """The documents that match `terms`, annotated with `rank` (higher is closer). With
    `match_all` each term must be there (a search box), else any (ranked by how much)."""
    if connection.vendor == "postgresql":
        fields = ["summary"] if summary_only else ["summary", "content"]
        vector = SearchVector(*fields, config="english")
        query = SearchQuery(
            tsquery(terms, match_all=match_all, prefix_last=prefix_last),
            config="english",
            search_type="raw",
        )
        return documents.annotate(found=vector, rank=SearchRank(vector, query)).filter(found=query)
    expression = fts5_query(terms, match_all=match_all, prefix_last=prefix_last)
    if summary_only:
        expression = f"summary : ({expression})"
    table = SearchDocument._meta.db_table
    return documents.filter(
        id__in=RawSQL(f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [expression])
    ).annotate(
        # bm25 is lower for a better match.
        rank=RawSQL(
            f"(SELECT -bm25({FTS_TABLE}) FROM {FTS_TABLE} "
            f"WHERE {FTS_TABLE} MATCH %s AND rowid = {table}.id)",
            [expression],
        )
    )


@dataclass(frozen=True)
class PlanExample:
    """A past plan close to a task: a template's latest version, or a run's approved plan."""

    kind: str  # "template" or "run"
    id: int
    number: int  # the template's version, or the run's plan version
    title: str
    task: str
    plan: dict[str, Any]

    @property
    def label(self) -> str:
        if self.kind == "template":
            return f"template “{self.title}” v{self.number}"
        return f"run {self.id} “{self.title}”"

    def as_record(self) -> dict[str, Any]:
        """What a run keeps of the examples its planner was given (Run.plan_examples)."""
        return {"kind": self.kind, "id": self.id, "number": self.number, "title": self.title}


def _library(user: User) -> Q:
    # Their own templates, the shared ones and their own runs that succeeded. Staff too: they see
    # every template so as to decide what to share, but a template nobody shared yet is its
    # owner's plan, and put into a staff member's planner it would land in another person's run
    # (the run keeps and shows its examples).
    templates = Q(template__isnull=False) & (Q(owner_id=user.pk) | Q(shared=True))
    runs = Q(run__owner_id=user.pk, run__status=RunStatus.SUCCEEDED, run__baseline_of=None)
    return templates | runs


def plan_examples_for(
    user: User, task: str, *, limit: int = 2, exclude_run_id: int | None = None
) -> list[PlanExample]:
    """The plans closest to `task` that `user` may see, closest first: at most `limit`, and
    none that shares too little with it (core.search.close_enough)."""
    terms = search_terms(task)
    if not terms or limit <= 0:
        return []
    documents = SearchDocument.objects.filter(_library(user))
    if exclude_run_id is not None:
        documents = documents.exclude(run_id=exclude_run_id)
    found = matching(documents, terms, match_all=False, summary_only=True)
    examples: list[PlanExample] = []
    # "rank" is matching()'s annotation, which django-stubs cannot see.
    ordered = found.select_related("run", "template").order_by("-rank", "-id")  # type: ignore[misc]
    for document in ordered[:CANDIDATES]:
        if not close_enough(terms, document.summary):
            continue
        example = _example(document)
        if example is not None:
            examples.append(example)
        if len(examples) >= limit:
            break
    return examples


def _example(document: SearchDocument) -> PlanExample | None:
    if document.template is not None:
        version = (
            PlanTemplateVersion.objects.filter(template=document.template)
            .order_by("-number")
            .first()
        )
        if version is None:
            return None
        return PlanExample(
            "template",
            document.template.pk,
            version.number,
            document.template.name,
            version.task,
            version.plan,
        )
    run = document.run
    assert run is not None, "a search document is a run's when it is not a template's"
    plan = run.approved_plan or run.plan_versions.order_by("-number").first()
    if plan is None:
        return None
    return PlanExample("run", run.pk, plan.number, run.task[:80], run.task, plan.plan)
