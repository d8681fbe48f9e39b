from django.db import migrations

# Called from the session UPDATE of every fenced event append (hangar.conversations.fence): raising aborts
# the whole statement, including the part/message writes that ride in it as CTEs.
CREATE = """
CREATE OR REPLACE FUNCTION hangar_lease_check(current_owner text, expected text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF current_owner IS DISTINCT FROM expected THEN
        RAISE EXCEPTION 'lease lost: the session is run by another worker'
            USING ERRCODE = 'HL001';
    END IF;
    RETURN true;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("conversations", "0002_lean_indexes")]

    operations = [
        migrations.RunSQL(sql=CREATE, reverse_sql="DROP FUNCTION IF EXISTS hangar_lease_check(text, text)")
    ]
