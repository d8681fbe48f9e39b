from django.db import migrations

# The run slot (migration 0010) also within each org owner's cap across the orgs they own
# (hangar.engine.fairness, HANGAR_USER_MAX_RUNS): anyone may create orgs, so one account's orgs together
# hold at most that many runs. After the org's row lock, each owner's transaction-level advisory lock
# (namespace 'hangar-owner-runs', in user id order: two acquirers never wait for each other in a cycle;
# an advisory lock never meets the row locks sign-ups and role changes take on users), then each count in
# a statement of its own, which sees every lease committed while this caller waited. An org the operator
# gave its own cap (max_concurrent_runs set) is judged by that cap alone and counts for no owner.
CREATE = """
DROP FUNCTION IF EXISTS hangar_lease_acquire_within_cap(text, text, integer, integer);
CREATE OR REPLACE FUNCTION hangar_lease_acquire_within_cap(
    p_session text, p_owner text, p_ttl_s integer, p_default_cap integer, p_owner_cap integer,
    OUT previous_owner text, OUT capped boolean, OUT session_org bigint
) LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    org_cap integer;
    own_cap integer;
    held integer;
BEGIN
    capped := false;
    SELECT o.id, coalesce(o.max_concurrent_runs, p_default_cap), o.max_concurrent_runs
    INTO session_org, org_cap, own_cap
    FROM accounts_org o
    WHERE o.id = (SELECT cs.org_id FROM conversations_session cs WHERE cs.id = p_session)
    FOR NO KEY UPDATE OF o;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT count(*) INTO held FROM conversations_session cs
    WHERE cs.org_id = session_org AND cs.lease_owner <> '' AND cs.lease_expires_at >= now()
      AND cs.id <> p_session;
    IF held >= org_cap THEN
        capped := true;
        RETURN;
    END IF;
    IF own_cap IS NULL AND p_owner_cap > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtext('hangar-owner-runs'), m.user_id::integer)
        FROM (SELECT user_id FROM accounts_membership WHERE org_id = session_org AND role = 'owner'
              ORDER BY user_id) m;
        IF EXISTS (
            SELECT 1 FROM accounts_membership m
            WHERE m.org_id = session_org AND m.role = 'owner'
              AND (SELECT count(*) FROM conversations_session cs JOIN accounts_org o ON o.id = cs.org_id
                   WHERE cs.org_id IN (SELECT mo.org_id FROM accounts_membership mo
                                       WHERE mo.user_id = m.user_id AND mo.role = 'owner')
                     AND o.max_concurrent_runs IS NULL
                     AND cs.lease_owner <> '' AND cs.lease_expires_at >= now() AND cs.id <> p_session
                  ) >= p_owner_cap
        ) THEN
            capped := true;
            RETURN;
        END IF;
    END IF;
    UPDATE conversations_session AS s SET lease_owner = p_owner, run_requested = false,
        lease_expires_at = now() + make_interval(secs => p_ttl_s)
    FROM (SELECT cs.id, cs.lease_owner FROM conversations_session cs WHERE cs.id = p_session FOR UPDATE) AS prev
    WHERE s.id = prev.id
      AND (s.lease_owner = '' OR s.lease_expires_at IS NULL OR s.lease_expires_at < now())
    RETURNING prev.lease_owner INTO previous_owner;
END $$;
"""
# Back to migration 0010's function.
DROP = "DROP FUNCTION IF EXISTS hangar_lease_acquire_within_cap(text, text, integer, integer, integer);"


def _previous():
    from importlib import import_module

    return import_module("hangar.conversations.migrations.0010_lease_acquire_within_cap").CREATE


class Migration(migrations.Migration):
    dependencies = [("conversations", "0014_budget_reserve"), ("accounts", "0008_org_instructions")]

    operations = [migrations.RunSQL(sql=CREATE, reverse_sql=DROP + _previous())]
