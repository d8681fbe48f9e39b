from django.db import migrations

# A run's lease within its org's cap, in one round trip (hangar.conversations.slot_services): lock the
# org's row, count its live leases, take the session's lease. A VOLATILE plpgsql function takes a new
# snapshot for each statement, so the count (after the lock) sees every lease committed while this caller
# waited for the lock, as the three statements in one READ COMMITTED transaction did.
CREATE = """
CREATE OR REPLACE FUNCTION hangar_lease_acquire_within_cap(
    p_session text, p_owner text, p_ttl_s integer, p_default_cap integer,
    OUT previous_owner text, OUT capped boolean, OUT session_org bigint
) LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    org_cap integer;
    held integer;
BEGIN
    capped := false;
    SELECT o.id, coalesce(o.max_concurrent_runs, p_default_cap) INTO session_org, org_cap
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
    UPDATE conversations_session AS s SET lease_owner = p_owner, run_requested = false,
        lease_expires_at = now() + make_interval(secs => p_ttl_s)
    FROM (SELECT cs.id, cs.lease_owner FROM conversations_session cs WHERE cs.id = p_session FOR UPDATE) AS prev
    WHERE s.id = prev.id
      AND (s.lease_owner = '' OR s.lease_expires_at IS NULL OR s.lease_expires_at < now())
    RETURNING prev.lease_owner INTO previous_owner;
END $$;
"""
DROP = "DROP FUNCTION IF EXISTS hangar_lease_acquire_within_cap(text, text, integer, integer)"


class Migration(migrations.Migration):
    dependencies = [("conversations", "0009_session_diff")]

    operations = [migrations.RunSQL(sql=CREATE, reverse_sql=DROP)]
