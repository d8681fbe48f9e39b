"""How both adapters read a model stream: abort closes it, failures become ProviderErrors, it is
always closed at the end.

A stream blocked in a socket read cannot see a flag, but closing its response wakes it. One watcher
thread per process checks every open stream's abort flag four times a second and closes the streams
whose run was aborted: the wake-ups stay the same however many sessions a worker carries, where a watcher
per stream would wake once per session."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator

from hangar.engine.providers.base import ProviderError, StreamEvent

CHECK_EVERY_S = 0.25

_watched: dict[int, tuple[threading.Event, Callable[[], None]]] = {}
_lock = threading.Lock()
_tokens = itertools.count()
_watcher: threading.Thread | None = None


def _watch(abort: threading.Event, close: Callable[[], None]) -> int:
    global _watcher
    token = next(_tokens)
    with _lock:
        _watched[token] = (abort, close)
        if _watcher is None or not _watcher.is_alive():
            _watcher = threading.Thread(target=_watch_forever, name="llm-abort-watch", daemon=True)
            _watcher.start()
    return token


def _watch_forever() -> None:
    wake = threading.Event()  # never set: a sleep that does not need the GIL-holding time module
    while True:
        wake.wait(CHECK_EVERY_S)
        with _lock:
            aborted = [(token, close) for token, (abort, close) in _watched.items() if abort.is_set()]
            for token, _close in aborted:
                del _watched[token]
        for _token, close in aborted:
            _quietly(close)


def _quietly(close: Callable[[], None]) -> None:
    try:
        close()
    except Exception:  # a stream that is already broken may fail to close: it is gone either way
        pass


def guarded(
    events: Iterator[StreamEvent],
    *,
    abort: threading.Event,
    close: Callable[[], None],
    to_error: Callable[[Exception], ProviderError],
) -> Iterator[StreamEvent]:
    """`events`, read under the abort watch. An exception other than a ProviderError becomes
    `to_error(exc)`, unless the run was aborted (closing the stream made the read fail): then the
    stream just ends. `close` runs at the end whatever happens (its own failure is ignored)."""
    token = _watch(abort, close)
    try:
        yield from events
    except ProviderError:
        raise
    except Exception as exc:
        if abort.is_set():
            return
        raise to_error(exc) from exc
    finally:
        with _lock:
            _watched.pop(token, None)
        _quietly(close)
