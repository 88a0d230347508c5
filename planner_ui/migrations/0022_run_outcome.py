from django.db import migrations, models


def backfill(apps, schema_editor):
    """Runs that finished before outcomes existed: a succeeded run that kept warnings (a step
    re-planned around) succeeded with warnings; the others ended as their status says. The
    reason is the first warning, or the error, on one line."""
    Run = apps.get_model("planner_ui", "Run")
    finished = Run.objects.filter(status__in=["succeeded", "failed", "cancelled"], outcome="")
    for run in finished.only("pk", "status", "warnings", "error").iterator():
        if run.status == "succeeded" and run.warnings:
            outcome, reason = "succeeded_with_warnings", str(run.warnings[0])
        else:
            outcome, reason = run.status, run.error if run.status != "succeeded" else ""
        reason = " ".join(reason.split())
        if len(reason) > 200:
            reason = reason[:199].rstrip() + "…"
        Run.objects.filter(pk=run.pk).update(outcome=outcome, outcome_reason=reason)


class Migration(migrations.Migration):

    dependencies = [
        ("planner_ui", "0021_model_call_tool_mode"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("succeeded", "succeeded"),
                    ("succeeded_with_warnings", "succeeded with warnings"),
                    ("failed", "failed"),
                    ("cancelled", "cancelled"),
                ],
                max_length=32,
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="outcome_reason",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
