-- The hot path's statements as their modules hold them: test_statements.py.

-- steps._CLAIM
UPDATE "planner_ui_step" SET status = %s, attempts = attempts + 1, started_at = %s, heartbeat_at = {clock}, worker = %s WHERE run_id = %s AND step_id = %s AND {claimable} AND EXISTS (SELECT 1 FROM "planner_ui_run" WHERE id = %s AND status = %s{locked}) RETURNING id, attempts

-- steps._CLAIM_WHOLE
WITH claimed AS (UPDATE "planner_ui_step" SET status = %s, attempts = attempts + 1, started_at = %s, heartbeat_at = statement_timestamp(), worker = %s WHERE run_id = %s AND step_id = %s AND {claimable} AND EXISTS (SELECT 1 FROM "planner_ui_run" WHERE id = %s AND status = %s FOR KEY SHARE) RETURNING "id", "run_id", "step_id", "position", "title", "instruction", "role", "tools", "depends_on", "dependents", "waiting_on", "status", "output", "error", "attempts", "retries", "model", "worker", "checkpoint", "heartbeat_at", "queued_at", "tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "model_calls", "cost_usd", "started_at", "finished_at", "reused_from_id"), counter AS (UPDATE "planner_ui_run" SET last_event_seq = last_event_seq + 1 WHERE id = %s AND EXISTS (SELECT FROM claimed) RETURNING "id", "owner_id", "task", "status", "auto_approve", "tool_policy", "auto_tools", "allowed_hosts", "replan_mode", "max_replans", "replans", "replanning", "paused_at", "baseline_of_id", "forked_from_id", "fork_step", "error", "result", "planner_model", "executor_model", "approved_plan_id", "routes", "budget_tokens", "budget_usd", "tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "model_calls", "cost_usd", "warnings", "outcome", "outcome_reason", "last_event_seq", "template_version_id", "template_values", "template_trigger", "created_at", "started_at", "finished_at"), started AS (INSERT INTO "planner_ui_runevent" (run_id, seq, type, step_id, payload, created_at) SELECT counter.id, counter.last_event_seq, %s, claimed.step_id, %s || jsonb_build_object('attempt', claimed.attempts), %s FROM claimed, counter RETURNING id) SELECT claimed.*, counter.*, started.id, (SELECT json_agg(json_build_array(parent.step_id, parent.title, parent.output)) FROM "planner_ui_step" AS parent WHERE parent.run_id = claimed.run_id AND parent.step_id IN (SELECT jsonb_array_elements_text(claimed.depends_on))) FROM claimed, counter, started

-- steps._FINISH
UPDATE "planner_ui_step" SET status = %s, finished_at = %s, model = %s, {column} = %s WHERE run_id = %s AND step_id = %s AND status = %s{held} RETURNING tokens_in, tokens_out, model_calls, cost_usd, started_at, dependents

-- steps._FINISH_LOCKING
WITH run_state AS MATERIALIZED (SELECT status, replanning, paused_at FROM "planner_ui_run" WHERE id = %s FOR {lock}) UPDATE "planner_ui_step" SET status = %s, finished_at = %s, model = %s, {column} = %s WHERE run_id = %s AND step_id = %s AND status = %s{held} AND EXISTS (SELECT FROM run_state) RETURNING tokens_in, tokens_out, model_calls, cost_usd, started_at, dependents, (SELECT status FROM run_state), (SELECT replanning FROM run_state), (SELECT paused_at FROM run_state)

-- events._NEXT_SEQS
UPDATE "planner_ui_run" SET last_event_seq = last_event_seq + %s WHERE id = %s RETURNING last_event_seq AS last

-- accounting._SPENT
SELECT status, tokens_in, tokens_out, cost_usd FROM "planner_ui_run" WHERE id = %s

-- accounting._ADD_TO_RUN
UPDATE "planner_ui_run" SET tokens_in = tokens_in + %s, tokens_out = tokens_out + %s, tokens_cache_read = tokens_cache_read + %s, tokens_cache_write = tokens_cache_write + %s, model_calls = model_calls + 1, cost_usd = cost_usd + CAST(%s AS NUMERIC) WHERE id = %s RETURNING status, tokens_in, tokens_out, cost_usd
