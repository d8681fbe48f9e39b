from django.db import migrations

# A model call's reservation against the hard budgets covering it, in one round trip
# (hangar.conversations.budget_services.session_budget_reserve): lock those budgets' rows (in id order, so
# two reservers never deadlock), then, in a statement of its own (a VOLATILE plpgsql function takes a new
# snapshot per statement, so it sees every hold and every settled call committed while this caller waited
# for the locks), check each budget's spend this period plus the live holds it covers plus this call's
# ceiling against its hard limit (an admin's override for the period included), and take the hold only if
# every one has room. A hold is live while its session's run lease is: a run that dies mid-call stops
# reserving anything when its lease expires. Answers the first budget without room, or NULL.
CREATE = """
CREATE OR REPLACE FUNCTION hangar_budget_reserve(
    p_session text, p_org bigint, p_project bigint, p_user bigint, p_amount double precision,
    p_today date, p_month date,
    OUT blocked_budget bigint, OUT blocked_spent double precision, OUT blocked_held double precision
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM 1 FROM usage_budget b
    WHERE b.org_id = p_org AND b.hard_limit IS NOT NULL
      AND (b.project_id IS NULL OR b.project_id = p_project) AND (b.user_id IS NULL OR b.user_id = p_user)
    ORDER BY b.id FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT c.id, c.spent, c.held INTO blocked_budget, blocked_spent, blocked_held FROM (
        SELECT b.id,
            b.hard_limit + CASE WHEN b.override_for = (CASE WHEN b.period = 'day' THEN p_today ELSE p_month END)
                THEN b.override_amount ELSE 0 END AS hard,
            (SELECT coalesce(sum(r.cost), 0) FROM usage_usagerollup r WHERE r.org_id = b.org_id
              AND r.dim = CASE b.scope WHEN 'org' THEN 'o' WHEN 'project' THEN 'p' ELSE 'u' END
              AND r.key = CASE b.scope WHEN 'org' THEN '' WHEN 'project' THEN b.project_id::text
                ELSE b.user_id::text END
              AND r.day >= CASE WHEN b.period = 'day' THEN p_today ELSE p_month END) AS spent,
            (SELECT coalesce(sum(h.amount), 0) FROM usage_budgethold h
              WHERE h.org_id = b.org_id AND h.session_id <> p_session AND h.amount > 0
                AND (b.project_id IS NULL OR h.project_id = b.project_id)
                AND (b.user_id IS NULL OR h.user_id = b.user_id)
                AND EXISTS (SELECT 1 FROM conversations_session s WHERE s.id = h.session_id
                    AND s.lease_owner <> '' AND s.lease_expires_at >= now())) AS held
        FROM usage_budget b
        WHERE b.org_id = p_org AND b.hard_limit IS NOT NULL
          AND (b.project_id IS NULL OR b.project_id = p_project) AND (b.user_id IS NULL OR b.user_id = p_user)
    ) c
    WHERE c.spent + c.held + p_amount > c.hard
    ORDER BY c.id LIMIT 1;
    IF blocked_budget IS NOT NULL THEN
        RETURN;
    END IF;
    INSERT INTO usage_budgethold AS h (session_id, org_id, project_id, user_id, amount, reserved_at)
    VALUES (p_session, p_org, p_project, p_user, p_amount, now())
    ON CONFLICT (session_id) DO UPDATE SET org_id = EXCLUDED.org_id, project_id = EXCLUDED.project_id,
        user_id = EXCLUDED.user_id, amount = EXCLUDED.amount, reserved_at = EXCLUDED.reserved_at;
END $$;
"""
DROP = "DROP FUNCTION IF EXISTS hangar_budget_reserve(text, bigint, bigint, bigint, double precision, date, date)"


class Migration(migrations.Migration):
    dependencies = [("conversations", "0013_session_share"), ("usage", "0005_budget_hold")]

    operations = [migrations.RunSQL(sql=CREATE, reverse_sql=DROP)]
