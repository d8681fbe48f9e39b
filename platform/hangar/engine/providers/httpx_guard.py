"""The same guards on LiteLLM's httpx client as the direct adapter has on its own (http.py): every TCP
connection goes to an address netguard allowed, resolved once, at connect time (a redirect LiteLLM
follows is checked the same way); every response body is counted as it arrives and cut at the response
cap, and is asked for and read uncompressed (a compressed body's decoded size is not the bytes read)."""

from __future__ import annotations

import typing

import httpcore
import httpx

from hangar import netguard
from hangar.engine.providers.base import ProviderError
from hangar.engine.providers.limits import TooLarge, cap


class CheckedBackend(httpcore.SyncBackend):
    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            infos = netguard.resolve(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        error: Exception | None = None
        for info in infos:
            try:
                return super().connect_tcp(str(info[4][0]), port, timeout, local_address, socket_options)

            except httpcore.ConnectError as exc:
                error = exc
        raise error or httpcore.ConnectError(f"no address for {host}:{port}")


class _CappedStream(httpx.SyncByteStream):
    def __init__(self, inner: typing.Any, limit: int):
        self._inner, self._limit = inner, limit

    def __iter__(self) -> typing.Iterator[bytes]:
        total = 0
        for chunk in self._inner:
            total += len(chunk)
            if total > self._limit:
                raise TooLarge("the response body", self._limit)
            yield chunk

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


class CappedTransport(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport):
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = self.inner.handle_request(request)
        if response.headers.get("content-encoding", "identity").lower() not in ("", "identity"):
            response.close()
            raise ProviderError(
                "the provider sent a compressed answer although asked not to", name="APIError"
            )
        response.stream = _CappedStream(response.stream, cap("HANGAR_MODEL_MAX_RESPONSE_BYTES"))
        return response

    def close(self) -> None:
        self.inner.close()


def install(client: httpx.Client) -> None:
    """Put the guards on `client` (idempotent: LiteLLM may rebuild its client, which is then re-guarded)."""
    if isinstance(client._transport, CappedTransport):
        return
    pool = getattr(client._transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        raise RuntimeError("LiteLLM's httpx transport changed shape: the model endpoint guard cannot attach")
    pool._network_backend = CheckedBackend()
    client._transport = CappedTransport(client._transport)
