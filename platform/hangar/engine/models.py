"""The engine keeps no tables of its own: runs live on conversations.Session (lease fields), rules on
projects/sessions/grants, and the org policy on accounts.Org.permission_policy."""
