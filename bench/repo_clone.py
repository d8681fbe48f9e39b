"""Session created -> first tool call possible, for a generated 10,000-file repository, against a plain
`git clone` of the same repository in the same run.

    .venv/bin/python bench/repo_clone.py [--runs 5] [--files 10000]

A real git smart-HTTP server (`git http-backend` behind tests/repos/gitserver.py) serves the repository on
127.0.0.1. Hangar's side runs the engine's own path in this process, on a database of its own
(`hangar_bench_repos`, migrated here): `session_create`, then `sandbox_for(session)` (get or create the
sandbox, fetch the org's mirror, check the session's branch out into its workspace), then the first tool
call (`exec("git --version >/dev/null; ls | wc -l")` in the sandbox). Scenarios:

- git clone: `git clone` over HTTP into a fresh quota volume like a session's (checkout included);
- cold, cold mirror: a sandbox created cold, no mirror and no checked-out tree of the commit yet (first
  session of an org on this host: clone --mirror, then the commit's shared tree is checked out);
- cold, warm mirror: a sandbox created cold, the mirror and the commit's tree there (fetch brings
  nothing new; the workspace is an overlay of that tree);
- warm pool, warm mirror: a sandbox claimed from a filled warm pool, the mirror and the tree there.

Each figure is the median (and min/max) of --runs sessions; the pool is refilled and allowed to settle
between runs so a run never waits for the previous one's refill. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_DB = os.environ.get("HANGAR_BENCH_REPOS_DB", "hangar_bench_repos")
sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def setup_django() -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone():
            conn.execute(f'CREATE DATABASE "{BENCH_DB}"')
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}"
    os.environ["HANGAR_REPO_ALLOW_PRIVATE_HOSTS"] = "1"  # the git server is on loopback
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hangar.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def generate(server, files: int) -> str:
    name = "public/big.git"
    if not (server.root / name).exists():
        content = {
            f"pkg{i // 100:03d}/mod{i % 100:03d}.py": f"# module {i}\n" + f"VALUE_{i} = {i * 7919}\n" * 12
            for i in range(files)
        }
        server.create(name, content)
    return server.url(name)


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def summary(values: list[float]) -> dict:
    return {
        "median_ms": round(statistics.median(values), 1),
        "min_ms": round(min(values), 1),
        "max_ms": round(max(values), 1),
    }


def plain_clone(url: str) -> float:
    """`git clone` into a fresh quota volume of the same kind as a session's (loop-mounted ext4), so the
    baseline writes its 10,000 files to the same filesystem as Hangar's checkout does."""
    from sandbox import volumes

    volume_id = volumes.new_volume_id()
    target = volumes.create_volume(volume_id, 2048) / "workspace" / "clone"
    home = tempfile.mkdtemp(prefix="hangar-bench-home-")
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "GIT_CONFIG_NOSYSTEM": "1"}
    try:
        return timed(lambda: subprocess.run(["git", "clone", "-q", url, str(target)], env=env, check=True))
    finally:
        volumes.destroy_volume(volume_id)
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    setup_django()

    from hangar.accounts.actors import Actor
    from hangar.accounts.models import Membership, Org, Role, User
    from hangar.audit.models import ActorType
    from hangar.conversations.services import session_create
    from hangar.engine.workspace import sandboxes
    from hangar.projects.models import Project
    from hangar.repos.models import SessionWorkspace
    from sandbox import DockerSandboxes, WarmPool, gitops
    from tests.repos.gitserver import GitServer

    server = GitServer(Path(tempfile.mkdtemp(prefix="hangar-bench-git-")), users={}).start()
    started = time.perf_counter()
    url = generate(server, args.files)
    log(f"generated a {args.files}-file repository in {time.perf_counter() - started:.1f} s")

    org, _ = Org.objects.get_or_create(slug="bench-repos", defaults={"name": "Bench repos"})
    user = User.objects.filter(email="bench-repos@bench.test").first() or User.objects.create_user(
        "bench-repos@bench.test"
    )
    Membership.objects.get_or_create(org=org, user=user, defaults={"role": Role.OWNER})
    project, _ = Project.objects.get_or_create(org=org, slug="big", defaults={"name": "big"})
    project.repo_url, project.setup_script = url, ""
    project.save()
    actor = Actor(type=ActorType.USER, org_id=org.pk, user=user, label=user.email)
    mirror = gitops.mirror_path(str(org.pk), url)

    cold = DockerSandboxes(pool=None, extra_labels={"hangar.bench": "repo_clone"})
    pool = WarmPool(1, template=sandboxes._pool_template(), extra_labels={"hangar.bench": "repo_clone"})
    pooled = DockerSandboxes(pool=pool, image=pool.image, extra_labels={"hangar.bench": "repo_clone"})
    made: list[tuple[DockerSandboxes, str]] = []

    def session_to_first_tool(manager) -> tuple[float, int]:
        sandboxes._manager = manager
        started = time.perf_counter()
        session = session_create(actor=actor, project=project, title="bench")
        box = sandboxes.sandbox_for(session)
        result = box.exec("git --version >/dev/null 2>&1; find . -type f | wc -l")
        elapsed = (time.perf_counter() - started) * 1000
        made.append((manager, session.pk))
        assert result.exit_code == 0 and int(result.output.split()[-1]) >= args.files, result.output
        return elapsed, SessionWorkspace.objects.get(session=session).prepare_ms

    results: dict[str, list[float]] = {
        k: [] for k in ("git_clone", "cold_cold_mirror", "cold_warm_mirror", "pool_warm_mirror")
    }
    prepare: dict[str, list[float]] = {k: [] for k in results if k != "git_clone"}
    try:
        for run in range(args.runs):
            results["git_clone"].append(plain_clone(url))

            shutil.rmtree(mirror, ignore_errors=True)
            for layer in gitops.layers_dir().glob(f"{mirror.stem}-*"):
                shutil.rmtree(layer)  # no session stands on it: the previous run's are destroyed
            ms, prep = session_to_first_tool(cold)
            results["cold_cold_mirror"].append(ms)
            prepare["cold_cold_mirror"].append(prep)

            ms, prep = session_to_first_tool(cold)
            results["cold_warm_mirror"].append(ms)
            prepare["cold_warm_mirror"].append(prep)

            pool.fill()
            time.sleep(1.0)  # let the pooled container's agent settle, as a pool does between sessions
            ms, prep = session_to_first_tool(pooled)
            results["pool_warm_mirror"].append(ms)
            prepare["pool_warm_mirror"].append(prep)
            log(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.0f} ms" for k, v in results.items()))
            for manager, session_id in made:
                manager.destroy(session_id)
            made.clear()
    finally:
        for manager, session_id in made:
            manager.destroy(session_id)
        pool.drain()
        server.stop()
    out = {
        "files": args.files,
        "runs": args.runs,
        "session_to_first_tool": {k: summary(v) for k, v in results.items()},
        "prepare_ms (mirror fetch + checkout, inside the above)": {k: summary(v) for k, v in prepare.items()},
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
