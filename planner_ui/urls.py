from django.urls import path

from .views import approvals, files, local_models, mcp, plans, report, retries, runs, tokens

urlpatterns = [
    path("", runs.home, name="home"),
    path("runs/", runs.run_list, name="run_list"),
    path("runs/new/", runs.run_new, name="run_new"),
    path("runs/new/hosts/", runs.run_new_hosts, name="run_new_hosts"),
    path("runs/<int:run_id>/", runs.run_detail, name="run_detail"),
    path("runs/<int:run_id>/steps/", runs.run_step_cards, name="run_step_cards"),
    path("runs/<int:run_id>/timeline/", report.run_timeline_part, name="run_timeline"),
    path(
        "runs/<int:run_id>/report.<str:kind>",
        report.run_report_download,
        name="run_report",
    ),
    path("runs/<int:run_id>/files/<path:path>", files.run_file_download, name="run_file"),
    path("runs/<int:run_id>/approve/", runs.run_approve, name="run_approve"),
    path("runs/<int:run_id>/cancel/", approvals.run_cancel_view, name="run_cancel"),
    path("runs/<int:run_id>/pause/", approvals.run_pause_view, name="run_pause"),
    path("runs/<int:run_id>/resume/", approvals.run_resume_view, name="run_resume"),
    path(
        "runs/<int:run_id>/steps/<slug:step_id>/retry/",
        retries.step_retry_view,
        name="step_retry",
    ),
    path("runs/<int:run_id>/steps/<slug:step_id>/fork/", retries.run_fork_view, name="run_fork"),
    path("runs/<int:run_id>/replan/", approvals.replan_decide_view, name="replan_decide"),
    path("runs/<int:run_id>/baseline/", approvals.run_baseline_view, name="run_baseline"),
    path("runs/<int:run_id>/compare/", approvals.run_compare, name="run_compare"),
    path("settings/api-tokens/", tokens.api_tokens, name="api_tokens"),
    path("settings/mcp/", mcp.mcp_servers, name="mcp_servers"),
    path("settings/local-models/", local_models.local_models, name="local_models"),
    path(
        "settings/local-models/start/",
        local_models.local_model_start_view,
        name="local_model_start",
    ),
    path(
        "settings/local-models/<int:model_id>/stop/",
        local_models.local_model_stop_view,
        name="local_model_stop",
    ),
    path("settings/mcp/new/", mcp.mcp_server_new, name="mcp_server_new"),
    path("settings/mcp/<int:server_id>/check/", mcp.mcp_server_check_view, name="mcp_server_check"),
    path(
        "settings/mcp/<int:server_id>/remove/", mcp.mcp_server_remove_view, name="mcp_server_remove"
    ),
    path("settings/mcp/tools/<int:tool_id>/", mcp.mcp_tool_update, name="mcp_tool_update"),
    path(
        "settings/api-tokens/<int:token_id>/revoke/",
        tokens.api_token_revoke,
        name="api_token_revoke",
    ),
    path("approvals/", approvals.approvals_inbox, name="approvals_inbox"),
    path("approvals/count/", approvals.approvals_count, name="approvals_count"),
    path("approvals/decide/", approvals.approvals_decide_many, name="approvals_decide_many"),
    path(
        "approvals/<int:approval_id>/decide/",
        approvals.approval_decide_view,
        name="approval_decide",
    ),
    path("runs/<int:run_id>/plan/change/", plans.plan_change, name="plan_change"),
    path("runs/<int:run_id>/plan/revision/", plans.plan_revision, name="plan_revision"),
    path("runs/<int:run_id>/plan/import/", plans.plan_import_view, name="plan_import"),
    path("runs/<int:run_id>/plan/diff/", plans.plan_diff_view, name="plan_diff"),
    path("runs/<int:run_id>/plan/v<int:number>.json", plans.plan_json, name="plan_json"),
]
