"""The retention purge (hangar.audit.services.audit_purge) may delete, and only it: the trigger lets a
DELETE through when the transaction has set `hangar.audit_purge` to 'on' (SET LOCAL, so it ends with the
transaction). UPDATE stays refused for every client. An index on (org, id) serves the read API's cursor
pages, newest first, inside one org."""

from django.db import migrations, models

FORWARD = """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('hangar.audit_purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

REVERSE = """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only_trigger")]
    operations = [
        migrations.RunSQL(FORWARD, REVERSE),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(fields=["org", "-id"], name="audit_org_id_desc"),
        ),
    ]
