#!/usr/bin/env python
"""Django's command-line entry point. Puts platform/ on sys.path first (see ARCHITECTURE.md:
platform/ is a source root, not a package, so it cannot shadow the stdlib `platform`)."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hangar.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
