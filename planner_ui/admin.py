from django import forms
from django.contrib import admin

from .core.sealing import Unreadable
from .models import (
    ModelCall,
    PlanTemplate,
    PlanTemplateVersion,
    PlanVersion,
    ProviderCredential,
    Run,
    RunEvent,
    Step,
)


class StepInline(admin.TabularInline):
    model = Step
    fk_name = "run"
    extra = 0
    fields = (
        "step_id",
        "title",
        "role",
        "status",
        "attempts",
        "model_calls",
        "tokens_in",
        "tokens_out",
        "cost_usd",
    )
    readonly_fields = fields
    can_delete = False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "status", "created_at", "tokens_in", "tokens_out", "cost_usd")
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


@admin.register(ModelCall)
class ModelCallAdmin(admin.ModelAdmin):
    list_display = (
        "run",
        "step_id",
        "role",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cost_usd",
        "latency_ms",
        "stop_reason",
    )
    list_filter = ("role", "provider", "stop_reason")

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class ProviderCredentialForm(forms.ModelForm):
    # Never rendered back into the page: the field is always empty, and leaving it empty
    # keeps the stored key.
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Leave empty to keep the current key. It is stored sealed with the secret key "
        "(a copy of the database alone does not reveal it), and shown "
        "back only as its first three and last four characters.",
    )
    clear_key = forms.BooleanField(required=False, label="Remove the stored key")
    # Local model servers usually speak plain http.
    base_url = forms.URLField(
        required=False,
        max_length=500,
        assume_scheme="http",
        help_text="Leave empty for the provider's default endpoint, or the environment's.",
    )

    class Meta:
        model = ProviderCredential
        fields = ("provider", "api_key", "base_url")

    def save(self, commit: bool = True) -> ProviderCredential:
        credential = super().save(commit=False)
        new_key = self.cleaned_data.get("api_key", "")
        if self.cleaned_data.get("clear_key"):
            credential.api_key = ""
        elif not new_key and credential.pk:
            kept = ProviderCredential.objects.get(pk=credential.pk)
            try:  # sealed again, with the current secret key if it was under a fallback
                credential.set_key(kept.key())
            except Unreadable:
                credential.api_key = kept.api_key
        else:
            credential.set_key(new_key)
        if commit:
            credential.save()
        return credential


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(admin.ModelAdmin):
    form = ProviderCredentialForm
    list_display = ("provider", "masked_key", "base_url", "updated_at")
    readonly_fields = ("masked_key",)
    fields = ("provider", "masked_key", "api_key", "clear_key", "base_url")

    @admin.display(description="Stored key")
    def masked_key(self, obj: ProviderCredential) -> str:
        return obj.masked_key or "—"


class PlanTemplateVersionInline(admin.TabularInline):
    model = PlanTemplateVersion
    extra = 0
    fields = ("number", "note", "source_run", "created_by", "created_at")
    readonly_fields = fields
    can_delete = False


@admin.register(PlanTemplate)
class PlanTemplateAdmin(admin.ModelAdmin):
    """Where staff decide which templates everyone may run."""

    list_display = ("name", "owner", "shared", "updated_at")
    list_filter = ("shared",)
    list_editable = ("shared",)
    fields = ("owner", "name", "description", "shared")
    readonly_fields = ("owner",)
    inlines = [PlanTemplateVersionInline]
