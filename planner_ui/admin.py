from django.contrib import admin

from .models import PlanVersion, Run, RunEvent, Step


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ("step_id", "title", "role", "status", "attempts", "tokens_in", "tokens_out")
    readonly_fields = fields
    can_delete = False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "status", "created_at", "tokens_in", "tokens_out")
    list_filter = ("status",)
    search_fields = ("task",)
    inlines = [StepInline]


@admin.register(PlanVersion)
class PlanVersionAdmin(admin.ModelAdmin):
    list_display = ("run", "number", "author", "created_at")

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "type", "step_id", "created_at")
    list_filter = ("type",)

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ("run", "step_id", "role", "status", "attempts", "started_at", "finished_at")
    list_filter = ("status", "role")
