"""Run inside a sandbox by bench/sandbox.py's snapshot section (copied to /tmp/snapshot_probe.py): the
current snapshot tracker (the agent's snapshots.py) against BASELINE's (old_snapshots, from `git show`),
interleaved on one workspace, a handful of files and 5,000. Prints one JSON object. Not imported on the
host: it runs under the sandbox image's Python, beside the agent's modules."""

import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, "/opt/hangar/agent")
sys.path.insert(0, "/tmp/baseline")
import snapshots  # the agent's, on the path above

spawns = [0]


class Counted(subprocess.Popen):
    def __init__(self, *a, **k):
        spawns[0] += 1
        super().__init__(*a, **k)


subprocess.Popen = Counted
import old_snapshots  # noqa: E402  (after Popen is counted)


def cpu_ms():
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.process_time() + kids.ru_utime + kids.ru_stime) * 1000


def populate(root, dirs, per_dir):
    for d in range(dirs):
        os.makedirs(f"{root}/src/d{d}", exist_ok=True)
        for f in range(per_dir):
            with open(f"{root}/src/d{d}/f{f}.py", "w") as out:
                out.write(f"# module {d}.{f}\n" + "x = 1\n" * 40)
    with open(f"{root}/.gitignore", "w") as out:
        out.write("*.pyc\nbuild/\n")


def bench(name, dirs, per_dir, reps):
    root = f"/workspace/probe-{name}"
    populate(root, dirs, per_dir)
    trackers = {
        "old": old_snapshots.Snapshots(f"/tmp/{name}-old", root),
        "new": snapshots.Snapshots(f"/tmp/{name}-new", root),
    }
    bases, out = {}, {}
    for key, repo in trackers.items():
        t = time.perf_counter()
        repo.init({})
        bases[key] = repo.track()["hash"]
        out[f"{key}_first_track_ms"] = round((time.perf_counter() - t) * 1000, 1)  # init included
    time.sleep(0.1)  # past the racy window: stats are trusted from here on
    samples = {
        f"{key}_{kind}_{m}": []
        for key in trackers
        for kind in ("edit", "same")
        for m in ("wall", "cpu", "spawns")
    }
    for i in range(reps):
        with open(f"{root}/src/d0/f{i % per_dir}.py", "a") as f:
            f.write(f"y = {i}\n")
        order = list(trackers) if i % 2 == 0 else list(reversed(trackers))
        for kind in ("edit", "same"):
            for key in order:
                spawns[0], c, t = 0, cpu_ms(), time.perf_counter()
                result = trackers[key].track_changed({"base": bases[key]})
                samples[f"{key}_{kind}_wall"].append((time.perf_counter() - t) * 1000)
                samples[f"{key}_{kind}_cpu"].append(cpu_ms() - c)
                samples[f"{key}_{kind}_spawns"].append(spawns[0])
                bases[key] = result["hash"]
                if kind == "edit":
                    assert result["paths"] == [f"src/d0/f{i % per_dir}.py"], result
    assert bases["old"] == bases["new"], "the two trackers disagree"
    for k, v in samples.items():
        out[k] = round(statistics.mean(v) if k.endswith("cpu") else statistics.median(v), 2)
    return out


print(
    json.dumps(
        {"small": bench("small", 2, 3, int(sys.argv[1])), "big": bench("big", 250, 20, int(sys.argv[2]))}
    )
)
