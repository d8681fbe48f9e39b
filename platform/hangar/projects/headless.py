"""A project's headless ask policy: what happens when a run's rules say `ask`, by what started the run
(its trigger). Stored on `Project.headless_policy` as {trigger: {mode, ...}}; a trigger not named keeps
its default (`DEFAULTS`). Applied by the engine at the ask (hangar.engine.agents.headless); checked by hangar.projects.headless_checks
(this module stays free of DRF: the engine reads it); docs/permissions.md.

Modes:
- `ask`: a pending request anyone who may answer the session answers (the web app, Slack's buttons in
  the run's thread); `expire_after_s` (optional for web and API, where a person is at the screen) turns
  an unanswered one into a reject.
- `reject`: no request; the call is refused at once and `reason` is fed back to the model, which goes on.
- `route`: a pending request only the named `approvers` (or an org admin) may answer; they hear of it by
  Slack DM with buttons and in the web app's notice; after `expire_after_s` it is rejected.
- `allow_listed`: the admin's `rules` (last match wins) approve what they allow; everything else is
  rejected as `reject` is.
"""

TRIGGERS = ("web", "api", "slack", "webhook", "codehost", "schedule")
MODES = ("ask", "reject", "route", "allow_listed")
INTERACTIVE = ("web", "api")  # someone is at a screen: an ask there may wait without an expiry
MAX_EXPIRE_S = 7 * 24 * 3600
MAX_APPROVERS = 20
MAX_REASON = 1000
DEFAULT_EXPIRE_S = 3600
DEFAULT_REASON = (
    "No one is watching this run to approve the call, and this project's policy for runs started this way "
    "refuses it. Do not retry it; find another way, or finish and say what you could not do."
)
# Web and API runs ask as they always have; a Slack run asks in its thread for an hour; a run no one
# watches (a webhook, a code host event, a schedule) refuses what would ask.
DEFAULTS: dict[str, dict] = {
    "web": {"mode": "ask"},
    "api": {"mode": "ask"},
    "slack": {"mode": "ask", "expire_after_s": DEFAULT_EXPIRE_S},
    "webhook": {"mode": "reject"},
    "codehost": {"mode": "reject"},
    "schedule": {"mode": "reject"},
}


def approvers_named(policy: dict) -> set[int]:
    return {a for entry in policy.values() for a in entry.get("approvers", [])}


def policy_for(headless_policy: dict | None, trigger: str) -> dict:
    """The entry in force for a trigger: the project's, else the default."""
    return (headless_policy or {}).get(trigger) or DEFAULTS.get(trigger) or DEFAULTS["web"]
