"""The two routes that wait: `GET /event` (SSE) and `POST /session/{id}/message` (blocks until the turn
ends). Both are plain async Django views (DRF has no async views), served by Daphne without a thread
per waiting client."""

import asyncio
import json
import time

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import APIException, MethodNotAllowed, NotFound, ValidationError

from hangar.accounts.models import Role
from hangar.conversations import selectors as conversation_selectors
from hangar.conversations.events import project_group, session_group
from hangar.conversations.models import Session
from hangar.errors import DomainError
from hangar.opencode import serializers as s
from hangar.opencode import translate
from hangar.opencode.cross_site import cross_site_refusal
from hangar.opencode.db import db
from hangar.opencode.errors import error_response
from hangar.opencode.meta import WORKSPACE
from hangar.opencode.scope import scope_for_async
from hangar.opencode.views_steer import prompt, run_command
from hangar.realtime.access import ACCESS_CHANGED, RECHECK_S, access_group
from hangar.realtime.subscribe import subscribe

KEEPALIVE_S = 10.0
PROMPT_TIMEOUT_S = 15 * 60  # a blocking prompt longer than this gets a 504; the run itself continues
POLL_S = 1.0  # the database is re-checked this often in case a notification was lost
FLUSH_S = 0.05  # lets SSE streams on the same channel layer deliver the idle event before we answer


@csrf_exempt
async def event_stream(request, project_id):
    """OpenCode's `/event`: the project's events (the caller's access checked as it goes)."""
    return await _stream(request, project_id, wrap=None)


@csrf_exempt
async def global_event_stream(request, project_id):
    """OpenCode's `/global/event`, the stream its TUI follows: the same events, each as a GlobalEvent
    (`{directory, project, payload}`) of the project's one directory, the sandbox's workspace."""

    def wrap(event: dict) -> dict:
        return {"directory": WORKSPACE, "project": str(project_id), "payload": event}

    return await _stream(request, project_id, wrap=wrap)


async def _stream(request, project_id, wrap):
    if request.method != "GET":
        return error_response(MethodNotAllowed(request.method))
    try:
        scope = await scope_for_async(request, project_id)
    except (APIException, DomainError) as exc:
        return error_response(exc)
    # Subscribed (barrier passed) before the response starts, so `server.connected` is a promise:
    # everything published after the client sees it is delivered. The caller's access notices come too.
    subscription = subscribe(
        [project_group(scope.project.pk), access_group(scope.project.org_id, scope.membership.user_id)]
    )
    await subscription.open()

    async def allowed() -> bool:
        try:
            await scope_for_async(request, project_id)  # the same checks as the request's own
        except (APIException, DomainError):
            return False
        return True

    response = StreamingHttpResponse(_events(subscription, allowed, wrap), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"
    response["X-Content-Type-Options"] = "nosniff"
    return response


async def _events(subscription, allowed, wrap=None):
    """The stream ends when its caller loses access (hangar.realtime.access): checked every RECHECK_S
    and at once on an access notice. `wrap` turns each event into what the route sends."""
    wrap = wrap or (lambda event: event)
    try:
        yield translate.sse(wrap(translate.server_connected()))
        check_at = time.monotonic() + RECHECK_S
        while True:
            event = await subscription.get(timeout=max(0.0, min(KEEPALIVE_S, check_at - time.monotonic())))
            if (event is not None and event.get("type") == ACCESS_CHANGED) or time.monotonic() >= check_at:
                if not await allowed():
                    return
                check_at = time.monotonic() + RECHECK_S
                if event is not None and event.get("type") == ACCESS_CHANGED:
                    continue
            if event is None:
                yield translate.KEEPALIVE
                continue
            for oc_event in translate.to_opencode(event):
                yield translate.sse(wrap(oc_event))
    finally:
        await subscription.close()


@csrf_exempt
async def session_message(request, project_id, session_id):
    """GET lists the messages; POST prompts and answers with the turn's last assistant message."""
    try:
        scope = await scope_for_async(request, project_id)
        session = await _session(scope, session_id)
        if request.method == "GET":
            return await _messages(request, session)
        return await _post_and_wait(request, scope, session, s.PromptIn, prompt)
    except (APIException, DomainError) as exc:
        return error_response(exc)


async def _messages(request, session: Session) -> JsonResponse:
    """As OpenCode 1.18.33 pages its messages: no limit (or 0) lists all; `limit` the most recent N,
    `before` (which needs a limit) those older than a cursor; more left → X-Next-Cursor and Link."""
    raw_limit, before = request.GET.get("limit"), request.GET.get("before") or None
    if raw_limit is not None and not raw_limit.isdigit():
        raise ValidationError({"limit": ["Must be a non-negative integer."]})
    limit = int(raw_limit) if raw_limit else 0
    if before is not None and not limit:
        raise ValidationError({"before": ["before requires limit"]})
    if not limit:
        return JsonResponse(await db(conversation_selectors.messages_list)(session), safe=False)
    rows, cursor = await db(conversation_selectors.messages_page)(session, limit=limit, before=before)
    response = JsonResponse(rows, safe=False)
    if cursor:
        params = request.GET.copy()
        params["limit"], params["before"] = str(limit), cursor
        response["Access-Control-Expose-Headers"] = "Link, X-Next-Cursor"
        response["Link"] = f'<{request.build_absolute_uri(request.path)}?{params.urlencode()}>; rel="next"'
        response["X-Next-Cursor"] = cursor
    return response


async def _session(scope, session_id) -> Session:
    try:
        return await db(conversation_selectors.session_get)(
            scope.actor, session_id, project_id=scope.project.pk
        )
    except Session.DoesNotExist:
        raise NotFound(f"Session not found: {session_id}") from None


def _json(request) -> dict:
    try:
        return json.loads(request.body or b"{}")
    except ValueError:
        raise ValidationError({"body": ["Malformed JSON."]}) from None


@csrf_exempt
async def session_command(request, project_id, session_id):
    """POST runs one of the workspace's commands and answers with the turn's last assistant message."""
    try:
        scope = await scope_for_async(request, project_id)
        session = await _session(scope, session_id)
        return await _post_and_wait(request, scope, session, s.CommandIn, run_command)
    except (APIException, DomainError) as exc:
        return error_response(exc)


async def _post_and_wait(request, scope, session: Session, body_in, start):
    """A member's POST (JSON only: no cross-site form), its body checked, the turn started by `start`
    and waited for."""
    if request.method != "POST":
        raise MethodNotAllowed(request.method)
    refusal = cross_site_refusal(request)
    if refusal is not None:
        raise refusal
    scope.require(Role.MEMBER)
    body = body_in(data=_json(request))
    body.is_valid(raise_exception=True)
    return await _prompt_and_wait(scope, session, body.validated_data, start)


async def _prompt_and_wait(scope, session: Session, data: dict, start):
    async with subscribe([session_group(session.pk)]) as subscription:
        user_message = await db(start)(scope.actor, session, data)
        if data.get("noReply"):
            return JsonResponse(await db(conversation_selectors.message_get)(session, user_message.pk))
        deadline = time.monotonic() + PROMPT_TIMEOUT_S
        while time.monotonic() < deadline:
            answer = await db(_finished_turn)(session.pk, user_message.pk)
            if answer is not None:
                await asyncio.sleep(FLUSH_S)
                return JsonResponse(answer)
            # Wake on the session's next event, or re-check after POLL_S regardless.
            await subscription.get(timeout=POLL_S)
    return HttpResponse(
        json.dumps({"name": "TimeoutError", "data": {"message": "The turn is still running."}}),
        status=504,
        content_type="application/json",
    )


def _finished_turn(session_id: str, user_message_id: str) -> dict | None:
    return conversation_selectors.finished_turn(session_id, after_message_id=user_message_id)
