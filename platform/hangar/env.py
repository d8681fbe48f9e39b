"""Settings come from the environment. `.env` at the repo root (written once by deploy/setup.sh with
fresh random keys) is read first; real environment variables win over it."""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

ROOT = Path(__file__).resolve().parents[2]


def load_dotenv(path: Path = ROOT / ".env") -> None:
    if not path.exists():
        return
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        os.environ.setdefault(key.strip(), value.strip().strip("'\""))


def required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ImproperlyConfigured(f"{name} is not set: run deploy/setup.sh (it writes .env) or export it")
    return value


def csv(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def flag(name: str, default: bool = False) -> bool:
    return os.environ.get(name, "1" if default else "0").lower() in {"1", "true", "yes", "on"}


def flag_or_csv(name: str) -> bool | list[str]:
    """An "allow private" setting: 1/true/yes/on opens every address (True), else a list of CIDRs
    (sandbox.netguard.networks reads both)."""
    value = os.environ.get(name, "").strip().lower()
    if value in {"", "0", "false", "no", "off"}:
        return []
    return flag(name) or csv(name)
