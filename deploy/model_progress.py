"""The bundled model's start-up report (read by hangar.local_model: health, the web app's badge, the
error a prompt gets before the model is ready; and by up.sh's status line).

  model_progress.py start STATUS API_BASE LOG ESTIMATE_S   installing, with a first estimate
  ... pip install -v ... | model_progress.py follow STATUS compiling n/N with an estimate from the pace
  model_progress.py set STATUS STATE API_BASE LOG          serving | failed
  model_progress.py show STATUS                            one line for a person (up.sh's status line)

`follow` copies its input to its output (the log) and counts the build's `[n/N]` steps. The time left
blends the first estimate (the measured install time, less what has passed) with the pace so far times
the steps left, trusting the pace as the steps get done: the first steps (C files) are much quicker than
the last (llama.cpp's C++), so the pace alone promised too little early on. Standard library only."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path

STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]")
INSTALL_TAIL_S = 30  # after the last build step: linking, the wheel, its install


def _reader():
    path = Path(__file__).resolve().parent.parent / "platform" / "hangar" / "local_model.py"
    spec = importlib.util.spec_from_file_location("hangar_local_model", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path: str, data: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def read(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def follow(path: str) -> None:
    data = read(path)
    first: tuple[float, int] | None = None  # when and at which step the build was first seen
    written = 0.0
    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
        match = STEP.match(line)
        if not match:
            continue
        done, total = int(match[1]), int(match[2])
        now = time.time()
        if first is None:
            first = (now, done)
        data.update(state="compiling", done=done, total=total)
        if done > first[1]:
            by_estimate = max(0.0, data.get("started", now) + data.get("estimate_s", 0) - now)
            by_pace = (now - first[0]) / (done - first[1]) * (total - done) + INSTALL_TAIL_S
            share = done / total
            data["eta"] = now + share * by_pace + (1 - share) * by_estimate
        if now - written >= 1 or done == total:
            write(path, data)
            written = now
    if first is not None:
        write(path, data)  # the last step seen, whatever the throttle skipped


def main(argv: list[str]) -> int:
    command, path = argv[0], argv[1]
    if command == "start":
        api_base, log, estimate = argv[2], argv[3], float(argv[4])
        now = time.time()
        write(
            path,
            {
                "state": "installing",
                "api_base": api_base,
                "log": log,
                "started": now,
                "estimate_s": estimate,
                "eta": now + estimate,
            },
        )
    elif command == "follow":
        follow(path)
    elif command == "set":
        write(path, {"state": argv[2], "api_base": argv[3], "log": argv[4], "started": time.time()})
    elif command == "show":
        data = _reader().status(path)
        print(_reader().describe(data) if data else "")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
