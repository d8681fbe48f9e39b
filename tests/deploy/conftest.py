"""What the deploy tests share: starting a script of deploy/ as a person would in a terminal."""

import subprocess
from pathlib import Path


def start_script(script: Path, env: dict, **popen) -> subprocess.Popen:
    """The script in a process group of its own (as a terminal runs it: SIGINT not ignored), its output
    and errors on one text pipe."""
    return subprocess.Popen(
        [str(script)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        **popen,
    )
