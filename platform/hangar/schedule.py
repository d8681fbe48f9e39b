"""One place for the beat schedule so `celery beat` and tests see the same entries."""

BEAT_SCHEDULE = {
    # Runs whose lease expired (worker killed) are resumed by another worker.
    "engine-recover-expired-leases": {"task": "hangar.engine.recover_expired_runs", "schedule": 5.0},
    # Asks the headless policy gave an expiry (hangar.engine.agents.headless): each has an eta task; this catches
    # one a broker restart lost, within the sweep's period.
    "engine-expire-asks": {"task": "hangar.engine.permission_expire_due", "schedule": 30.0},
    # Hosts whose heartbeat stopped are lost, and their busy sessions end their turn (engine.run.host_loss).
    "sandbox-hosts-sweep": {"task": "hangar.engine.sandbox_hosts_sweep", "schedule": 5.0},
    "sandbox-reap": {"task": "hangar.engine.reap_sandboxes", "schedule": 60.0},
    # Workspaces are thin provisioned: the writer behind a crossed disk line is paused within seconds.
    "sandbox-watermark": {"task": "hangar.engine.sandbox_watermark", "schedule": 5.0},
    # Live workspaces changed since their last checkpoint are copied to the archive (sandbox.workspace_checkpoint),
    # each at most every HANGAR_WORKSPACE_CHECKPOINT_S: what a session resumes from when its host is lost.
    "sandbox-checkpoints": {"task": "hangar.engine.workspace_checkpoints", "schedule": 30.0},
    # Each org's audit rows older than its retention (default 180 days); the purge audits itself.
    "audit-retention-purge": {"task": "hangar.accounts.purge_audit", "schedule": 3600.0},
    # Old events of finished sessions, per HANGAR_EVENT_RETENTION_DAYS (hangar.conversations.retention_services).
    "engine-purge-events": {"task": "hangar.engine.purge_events", "schedule": 3600.0},
    "webhooks-purge-receipts": {"task": "hangar.integrations.webhooks.purge_receipts", "schedule": 300.0},
}
