"""webfetch: GET a URL from the worker, under the project's network policy (`fetching.py`), and hand the
model its content as markdown (default), plain text or raw HTML. OpenCode's parameters and limits: 5 MB,
30 s by default and at most 120 s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from hangar.engine.tools.base import EXTRA_SESSION, ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import description
from hangar.engine.tools.fetching import Fetched, FetchRefused, fetch, project_rules

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

DEFAULT_TIMEOUT_S = 30
MAX_TIMEOUT_S = 120
# Page furniture that is never content: dropped before converting.
NOT_CONTENT = ["script", "style", "noscript", "iframe", "object", "embed", "meta", "link", "svg"]


class WebFetchParams(BaseModel):
    url: str = Field(description="The URL to fetch content from")
    format: Literal["text", "markdown", "html"] = Field(
        default="markdown",
        description="The format to return the content in (text, markdown, or html). Defaults to markdown.",
    )
    timeout: float | None = Field(default=None, description="Optional timeout in seconds (max 120)")


def _soup(html: str) -> BeautifulSoup:
    from bs4 import BeautifulSoup  # imported on first use: about a second, and only webfetch needs it

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(NOT_CONTENT):
        tag.decompose()
    return soup


def render(page: Fetched, form: str) -> str:
    """The body in the asked format; HTML is converted, anything else textual is returned as it is."""
    if not page.content_type.startswith(
        ("text/", "application/json", "application/xml", "application/xhtml")
    ):
        kind = page.content_type or "unknown type"
        return f"(binary content, {kind}, {len(page.body)} bytes: not shown)"
    text = page.body.decode(page.encoding or "utf-8", "replace")
    if "html" not in page.content_type or form == "html":
        return text
    if form == "text":
        lines = (line.strip() for line in _soup(text).get_text("\n").splitlines())
        return "\n".join(line for line in lines if line)
    from markdownify import MarkdownConverter

    markdown: str = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(_soup(text))
    return markdown.strip()


class WebFetchTool:
    name = "webfetch"
    description = description("webfetch")
    parameters = WebFetchParams

    def execute(self, args: WebFetchParams, ctx: ToolContext) -> ToolResult:
        if not args.url.startswith(("http://", "https://")):
            raise ToolError("URL must start with http:// or https://")
        timeout = min(args.timeout or DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S)
        if timeout <= 0:
            raise ToolError(f"Invalid timeout value: {args.timeout}. Timeout must be a positive number.")
        ctx.ask("webfetch", [args.url], ["*"], {"url": args.url, "format": args.format, "timeout": timeout})
        session = ctx.extra.get(EXTRA_SESSION)
        if session is None:
            raise ToolError("webfetch runs only in a session (it follows the project's network policy)")
        try:
            page = fetch(args.url, project_rules(session.project), timeout_s=timeout, abort=ctx.abort)
        except FetchRefused as exc:
            raise ToolError(str(exc)) from None
        return ToolResult(
            title=f"{args.url} ({page.content_type or 'unknown type'})",
            output=render(page, args.format),
            metadata={"url": page.url, "status": page.status, "contentType": page.content_type},
        )
