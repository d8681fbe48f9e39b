"""Session created -> first tool call with a setup script of ~20 s: the first session on a commit (the script
runs, and its result is kept as a cached environment), the next session on the same commit (it starts from
the kept layer), and a session of the same repository with no setup script at all (goal of issue 28: the
next within 1.2x of no setup).

    .venv/bin/python bench/env_cache.py [--runs 3] [--setup-s 20] [--files 2000]

A real git smart-HTTP server (tests/repos/gitserver.py) serves a 500-file repository on 127.0.0.1. The
engine's own path runs in this process on the bench database (bench/common.py): `session_create`, then
`sandbox_for(session)` (create the sandbox cold, fetch, check out or restore, run the setup script or not),
then the first tool call (`exec` of a `find | wc -l` over the workspace, which also proves what is there).
The setup script sleeps --setup-s seconds and writes --files files (a dependency tree's worth); each run
changes the script by a comment, so its first session is a real first (no layer of that key yet). Sandboxes
are created cold for every session (no warm pool), the mirror is warm after the first run's fetch.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from common import arguments, bench_env, emit, log, open_bench_db, wait_quiet

SETUP = """set -e
sleep {sleep}
mkdir -p node_modules
i=0; while [ $i -lt {files} ]; do mkdir -p node_modules/p$((i / 100)); echo "module $i" > node_modules/p$((i / 100))/m$i.js; i=$((i + 1)); done
echo ready
# run {run}
"""


def summary(values: list[float]) -> dict:
    return {
        "median_ms": round(statistics.median(values), 1),
        "min_ms": round(min(values), 1),
        "max_ms": round(max(values), 1),
    }


def main() -> None:
    args = arguments(
        __doc__,
        ("--runs", {"type": int, "default": 3}),
        ("--setup-s", {"type": float, "default": 20.0}),
        ("--files", {"type": int, "default": 2000}),
    )
    open_bench_db(bench_env(HANGAR_REPO_ALLOW_PRIVATE_HOSTS="1"))

    from hangar.accounts.actors import Actor
    from hangar.accounts.models import Membership, Org, Role, User
    from hangar.audit.models import ActorType
    from hangar.conversations.services import session_create
    from hangar.engine.workspace import sandboxes
    from hangar.projects.models import Project
    from hangar.repos.models import SessionWorkspace
    from sandbox import DockerSandboxes
    from tests.repos.gitserver import GitServer

    server = GitServer(Path(tempfile.mkdtemp(prefix="hangar-bench-git-")), users={}).start()
    server.create("public/app.git", {f"src/m{i:03d}.py": f"VALUE = {i}\n" * 20 for i in range(500)})
    url = server.url("public/app.git")
    org, _ = Org.objects.update_or_create(
        slug="bench-env",
        defaults={"name": "Bench env", "max_concurrent_runs": 1000, "max_live_sandboxes": 1000},
    )
    user = User.objects.filter(email="bench-env@bench.test").first() or User.objects.create_user(
        "bench-env@bench.test"
    )
    Membership.objects.get_or_create(org=org, user=user, defaults={"role": Role.OWNER})
    actor = Actor(type=ActorType.USER, org_id=org.pk, user=user, label=user.email)
    projects = {}
    for slug in ("with-setup", "no-setup"):
        projects[slug], _ = Project.objects.update_or_create(
            org=org, slug=slug, defaults={"name": slug, "repo_url": url, "setup_script": ""}
        )
    cold = DockerSandboxes(pool=None, extra_labels={"hangar.bench": "env_cache"})
    sandboxes._manager = cold
    made: list[str] = []

    def session_to_first_tool(project: Project, expect_files: int) -> tuple[float, int, str]:
        started = time.perf_counter()
        session = session_create(actor=actor, project=project, title="bench")
        made.append(session.pk)
        box = sandboxes.sandbox_for(session)
        result = box.exec("find . -type f -not -path './.git/*' | wc -l")
        elapsed = (time.perf_counter() - started) * 1000
        assert result.exit_code == 0 and int(result.output.split()[-1]) >= expect_files, result.output
        row = SessionWorkspace.objects.get(session=session)
        return elapsed, row.prepare_ms or 0, row.setup_log

    results: dict[str, list[float]] = {"first": [], "next": [], "no_setup": []}
    prepare: dict[str, list[float]] = {k: [] for k in results}
    try:
        # A warm-up: the mirror fetched once and the commit's checkout layer built, for every scenario alike.
        session_to_first_tool(projects["no-setup"], 500)
        for run in range(args.runs):
            project = projects["with-setup"]
            project.setup_script = SETUP.format(
                sleep=args.setup_s, files=args.files, run=f"{run}-{time.time()}"
            )
            project.save()
            for name, target, files in (
                ("first", project, 500 + args.files),
                ("next", project, 500 + args.files),
                ("no_setup", projects["no-setup"], 500),
            ):
                wait_quiet(limit_s=20)
                ms, prep, setup_log = session_to_first_tool(target, files)
                if name == "first":
                    assert "ready" in setup_log, setup_log
                if name == "next":
                    assert "cached environment" in setup_log, setup_log
                results[name].append(ms)
                prepare[name].append(prep)
            log(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.0f} ms" for k, v in results.items()))
            for session_id in made:
                cold.destroy(session_id)
            made.clear()
    finally:
        for session_id in made:
            cold.destroy(session_id)
        server.stop()
    nxt, none = statistics.median(results["next"]), statistics.median(results["no_setup"])
    emit(
        {
            "runs": args.runs,
            "setup_s": args.setup_s,
            "setup_files": args.files,
            "repo_files": 500,
            "session_to_first_tool": {k: summary(v) for k, v in results.items()},
            "prepare_ms (inside the above: fetch, checkout or restore, setup, keeping the layer)": {
                k: summary(v) for k, v in prepare.items()
            },
            "next_over_no_setup": round(nxt / none, 3),
            "goal_next_within_1_2x": nxt <= 1.2 * none,
        }
    )


if __name__ == "__main__":
    main()
