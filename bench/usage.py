"""The usage API and the budget check on an org with a million ledger rows.

    .venv/bin/python bench/usage.py [--rows 1000000] [--requests 40]

Seeds, on a database of its own (`hangar_bench_usage`, migrated here), one org with --projects projects
and --members members, and --rows ledger rows spread over --days UTC days and four models (one INSERT ...
SELECT over generate_series), then its daily rollup as the ledger's own upserts would have left it (one
INSERT ... SELECT ... GROUP BY; the script checks that the rollup's total equals the ledger's). It then
times, in this process through Django's full request stack (DRF's test client: authentication, org
scoping, the view, the selector, JSON rendering; no socket):

- GET /api/orgs/<org>/usage for each grouping (day, member, project, model) over the whole range, and the
  CSV export by member; --requests requests each after one warm-up;
- the budget check a model call makes (hangar.usage.gate.usage_gate) with an org, a project and a member
  budget covering the call, and with none;
- for comparison, the same spend-by-day answer summed from the ledger itself;
- the gate's share of an agent step: the real loop (hangar.engine.run.loop.Loop) in this process, on the same
  org with its three budgets, against the fast tier's in-process scripted model and a local-directory
  sandbox (tests/engine/fast: no Docker, no HTTP, so the step is the loop's own cost and the gate is as
  large a share of it as it can be), five steps a session, --ab-rounds rounds each running one session with
  the gate and one with it stubbed out (its verdict: nothing to refuse), in alternating order.

The last line printed is one JSON object.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "platform"), str(ROOT)]
os.environ.setdefault("HANGAR_BENCH_DB", "hangar_bench_usage")

from common import arguments, bench_env, emit, log, open_bench_db, summary  # noqa: E402

SLUG = "bench-usage"


def seed(args) -> tuple:
    """The org, its owner's raw token, a project and a member: created once, the ledger re-seeded only when
    its row count differs from --rows."""
    from django.db import connection

    from hangar.accounts import tokens
    from hangar.accounts.models import ApiToken, Membership, Org, Role, User
    from hangar.projects.models import Project
    from hangar.usage.models import UsageRecord

    org, _ = Org.objects.get_or_create(slug=SLUG, defaults={"name": "Bench usage"})
    users = [User.objects.get_or_create(email=f"member{i}@bench-usage.test")[0] for i in range(args.members)]
    for i, user in enumerate(users):
        Membership.objects.get_or_create(
            org=org, user=user, defaults={"role": Role.OWNER if i == 0 else "member"}
        )
    projects = [
        Project.objects.get_or_create(org=org, slug=f"p{i}", defaults={"name": f"p{i}"})[0]
        for i in range(args.projects)
    ]
    ApiToken.objects.filter(org=org, name="bench").delete()
    raw, prefix = tokens.generate()
    ApiToken.objects.create(org=org, user=users[0], name="bench", prefix=prefix, digest=tokens.digest(raw))
    have = UsageRecord.objects.filter(org_id=org.pk).count()
    if have != args.rows:
        log(f"seeding {args.rows} ledger rows over {args.days} days (had {have})")
        started = time.monotonic()
        user_ids = [u.pk for u in users]
        project_ids = [p.pk for p in projects]
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM usage_usagerecord WHERE org_id = %s", [org.pk])
            cursor.execute(
                "INSERT INTO usage_usagerecord (org_id, project_id, session_id, user_id, kind, source, provider,"
                " model, input_tokens, output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens,"
                " cost, latency_ms, outcome, created_at)"
                " SELECT %s, (%s::bigint[])[1 + g %% %s], 'ses_' || (g / 40), (%s::bigint[])[1 + (g / 7) %% %s],"
                " CASE WHEN g %% 50 = 0 THEN 'title' ELSE 'step' END, 'app', 'openai',"
                " (ARRAY['gpt-4o', 'gpt-4o-mini', 'o3', 'gpt-4.1'])[1 + g %% 4],"
                " 1000 + g %% 5000, 50 + g %% 700, g %% 3 * 10, g %% 2000, 0,"
                " (1000 + g %% 5000) * 0.0000025 + (50 + g %% 700) * 0.00001, 200 + g %% 3000,"
                " CASE WHEN g %% 97 = 0 THEN 'error' ELSE 'ok' END,"
                " now() - make_interval(secs => (g::float8 / %s) * %s * 86400)"
                " FROM generate_series(0, %s - 1) AS g",
                [
                    org.pk,
                    project_ids,
                    len(project_ids),
                    user_ids,
                    len(user_ids),
                    args.rows,
                    args.days,
                    args.rows,
                ],
            )
            cursor.execute("ANALYZE usage_usagerecord")
        log(f"seeded in {time.monotonic() - started:.1f} s")
    rebuild_rollup(org.pk)
    return org, raw, projects[0], users[1]


# The rollup as the ledger's own upserts (hangar.usage.ledger_services) leave it: per day, one dimension at a
# time, keyed as they key it.
DIMENSIONS = {
    "o": "''",
    "p": "coalesce(project_id, 0)::text",
    "u": "coalesce(user_id, 0)::text",
    "m": "provider || '/' || model",
}


def rebuild_rollup(org_id: int) -> None:
    from django.db import connection

    started = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM usage_usagerollup WHERE org_id = %s", [org_id])
        for dim, key in DIMENSIONS.items():
            cursor.execute(
                "INSERT INTO usage_usagerollup (org_id, day, dim, key, calls, errors, input_tokens,"
                " output_tokens, reasoning_tokens, cache_read_tokens, cache_write_tokens, cost)"
                f" SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, %s, {key}, count(*),"
                " count(*) FILTER (WHERE outcome <> 'ok'), sum(input_tokens), sum(output_tokens),"
                " sum(reasoning_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(cost)"
                " FROM usage_usagerecord WHERE org_id = %s GROUP BY 1, 2, 3, 4",
                [dim, org_id],
            )
        cursor.execute("ANALYZE usage_usagerollup")
    log(f"rollup rebuilt in {time.monotonic() - started:.1f} s")


def timed(fn, n: int) -> list[float]:
    fn()  # warm-up: the first request builds DRF's and the URLconf's caches
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def gate_in_the_loop(org, project, member, rounds: int) -> dict:
    """Per-step wall time of the loop with the gate and with it stubbed, interleaved (see the docstring)."""
    import statistics
    import tempfile
    import threading

    from django.conf import settings

    from hangar.accounts.actors import Actor
    from hangar.conversations.services import session_create
    from hangar.engine.run.loop import Loop
    from hangar.engine.services import session_prompt
    from hangar.engine.tools.registry import ALL, tool_schemas
    from hangar.engine.turn import spend
    from hangar.usage.gate import Verdict
    from hangar.usage.models import Budget
    from tests.engine.fast.scripted_model import ScriptedModel
    from tests.engine.tools.local_sandbox import LocalSandbox

    settings.HANGAR_MODEL_PRICES = {"scripted/fast": {"input": 1e-9, "output": 1e-9}}
    tool_schemas(ALL)
    budgets = [
        Budget.objects.create(org=org, scope="org", period="month", hard_limit=1e9, soft_limit=1e9),
        Budget.objects.create(org=org, scope="project", project_id=project.pk, period="day", hard_limit=1e9),
        Budget.objects.create(org=org, scope="member", user_id=member.pk, period="month", hard_limit=1e9),
    ]
    actor = Actor(type="user", org_id=org.pk, user=member, label=member.email)
    real_gate = spend.usage_gate

    def stub(**_kw):
        return Verdict(refused_model=None, blocked=None, alerts=[])

    def one_session(gate) -> float:
        spend.usage_gate = gate
        turns = [
            [{"tool_calls": [{"name": "bash", "id": f"c{i}", "arguments": {"command": f"echo {i}"}}]}]
            for i in range(4)
        ] + [[{"text": "done"}]]
        with tempfile.TemporaryDirectory() as root:
            session = session_create(
                actor=actor, project=project, model={"providerID": "scripted", "modelID": "fast"}
            )
            session_prompt(actor=actor, session=session, parts=[{"type": "text", "text": "go"}])
            model = ScriptedModel(turns)
            loop = Loop(
                session.pk,
                threading.Event(),
                resolve_model=lambda **_: model,
                sandbox_for=lambda _s: LocalSandbox(Path(root), session.pk),
            )
            started = time.perf_counter()
            loop.run()
            return (time.perf_counter() - started) * 1000 / 5

    try:
        one_session(real_gate), one_session(stub)  # warm-up
        with_gate, without = [], []
        for i in range(rounds):
            order = [(with_gate, real_gate), (without, stub)]
            for samples, gate in order if i % 2 == 0 else reversed(order):
                samples.append(one_session(gate))
    finally:
        spend.usage_gate = real_gate
        Budget.objects.filter(pk__in=[b.pk for b in budgets]).delete()
    diffs = [a - b for a, b in zip(with_gate, without, strict=True)]
    return {
        "with_gate_step_ms": summary(with_gate, 0.95),
        "without_gate_step_ms": summary(without, 0.95),
        "paired_difference_median_ms": round(statistics.median(diffs), 3),
        "without_gate_stdev_ms": round(statistics.stdev(without), 3),
    }


def main() -> None:
    args = arguments(
        __doc__,
        ("--rows", {"type": int, "default": 1_000_000}),
        ("--days", {"type": int, "default": 90}),
        ("--projects", {"type": int, "default": 10}),
        ("--members", {"type": int, "default": 25}),
        ("--requests", {"type": int, "default": 40}),
        ("--ab-rounds", {"type": int, "default": 30}),
    )
    open_bench_db(bench_env())
    from django.conf import settings
    from django.db import connection
    from rest_framework.test import APIClient

    from hangar.usage.gate import usage_gate
    from hangar.usage.models import Budget, UsageRecord, UsageRollup

    settings.ALLOWED_HOSTS = ["*"]
    org, raw, project, member = seed(args)
    ledger_rows = UsageRecord.objects.filter(org_id=org.pk).count()
    rollup_rows = UsageRollup.objects.filter(org_id=org.pk).count()
    with connection.cursor() as cursor:
        cursor.execute("SELECT sum(cost) FROM usage_usagerecord WHERE org_id = %s", [org.pk])
        ledger_cost = cursor.fetchone()[0]
        cursor.execute(
            "SELECT dim, sum(cost) FROM usage_usagerollup WHERE org_id = %s GROUP BY dim", [org.pk]
        )
        rollup_cost = dict(cursor.fetchall())
    for dim, cost in rollup_cost.items():  # each dimension adds up to the whole ledger
        assert abs(ledger_cost - cost) < 1e-6 * max(1.0, ledger_cost), (dim, ledger_cost, cost)

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    start = (time.time() - args.days * 86400) // 86400
    params = {"from": time.strftime("%Y-%m-%d", time.gmtime(start * 86400))}
    figures: dict = {}
    for group in ("day", "member", "project", "model"):

        def get(group=group):
            response = client.get(f"/api/orgs/{SLUG}/usage", {**params, "group_by": group})
            assert response.status_code == 200, response.content
            return response

        figures[f"usage_by_{group}"] = summary(timed(get, args.requests), 0.95)
        log(f"usage by {group}: {figures[f'usage_by_{group}']}")

    def export():
        response = client.get(f"/api/orgs/{SLUG}/usage/export.csv", {**params, "group_by": "member"})
        assert response.status_code == 200

    figures["usage_export_csv_by_member"] = summary(timed(export, args.requests), 0.95)

    def gate():
        usage_gate(org_id=org.pk, project_id=project.pk, user_id=member.pk, provider="openai", model="o3")

    Budget.objects.filter(org=org).delete()
    figures["budget_check_no_budgets"] = summary(timed(gate, args.requests * 10), 0.95, digits=3)
    Budget.objects.create(org=org, scope="org", period="month", hard_limit=1e9, soft_limit=1e9)
    Budget.objects.create(org=org, scope="project", project_id=project.pk, period="day", hard_limit=1e9)
    Budget.objects.create(org=org, scope="member", user_id=member.pk, period="month", hard_limit=1e9)
    figures["budget_check_three_budgets"] = summary(timed(gate, args.requests * 10), 0.95, digits=3)
    Budget.objects.filter(org=org).delete()
    log(f"budget check: {figures['budget_check_no_budgets']} / {figures['budget_check_three_budgets']}")

    def from_ledger():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT (created_at AT TIME ZONE 'UTC')::date, sum(cost), count(*) FROM usage_usagerecord"
                " WHERE org_id = %s GROUP BY 1 ORDER BY 1",
                [org.pk],
            )
            cursor.fetchall()

    figures["spend_by_day_summed_from_the_ledger"] = summary(timed(from_ledger, 3), 0.95)
    figures["step_in_process"] = gate_in_the_loop(org, project, member, args.ab_rounds)
    emit({"ledger_rows": ledger_rows, "rollup_rows": rollup_rows, "days": args.days, **figures})


if __name__ == "__main__":
    main()
