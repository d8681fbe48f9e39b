"""Cells of the CSV exports (audit log, usage) that a spreadsheet would not run: a text cell starting
with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula to Excel, LibreOffice and Sheets, and
its text can come from anyone (a client's `X-Request-ID`, a model id, a member's name). Such a cell is
written with a leading `'` (OWASP's CSV injection advice), which spreadsheets show as text."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def row(values: Iterable[Any]) -> list[Any]:
    return [cell(v) for v in values]
