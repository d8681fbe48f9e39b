"""A scripted OpenAI-compatible chat server for tests and benchmarks (stdlib only).

`python -m scripted_llm --port N` serves `POST /v1/chat/completions` (SSE streaming or JSON) from
scripts loaded over `POST /_scripts`, and records every request for `GET /_requests`.
See `scripted_llm.server` for the script format.
"""

from scripted_llm.server import ScriptedServer, serve

__all__ = ["ScriptedServer", "serve"]
