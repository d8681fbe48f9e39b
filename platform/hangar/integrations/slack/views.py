"""Slack's HTTP edges under /hooks/slack/: events, commands and interactions (verified, then handed to
Bolt), the OAuth v2 install flow, and the page where a signed-in member links their Slack user."""

import html
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpResponse, HttpResponseBadRequest, HttpResponseRedirect, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods
from rest_framework.exceptions import APIException
from slack_bolt.adapter.django import SlackRequestHandler
from slack_sdk.signature import SignatureVerifier

from hangar.accounts.actors import Actor, client_ip
from hangar.accounts.models import Membership
from hangar.audit.models import ActorType
from hangar.errors import DomainError
from hangar.integrations.slack import services
from hangar.integrations.slack.bolt import bolt_app
from hangar.integrations.slack.client import web_client

SCOPES = "app_mentions:read,chat:write,commands,im:history,channels:history,groups:history"
STATE_COOKIE = "hangar_slack_install"
REPLAY_WINDOW_S = 600  # Bolt refuses timestamps older than 5 minutes; a signature is remembered longer


@csrf_exempt
@require_http_methods(["POST"])
def slack_events(request):
    """Events API, slash commands and interactivity all arrive here (one Request URL for the app)."""
    if not settings.SLACK_SIGNING_SECRET:
        return JsonResponse({"error": "Slack is not configured"}, status=503)
    body = request.body
    headers = {k.lower(): v for k, v in request.headers.items()}
    verifier = SignatureVerifier(settings.SLACK_SIGNING_SECRET)
    if not verifier.is_valid_request(body, headers):
        return JsonResponse({"error": "invalid request"}, status=401)
    # Slack's scheme has no nonce: the same signed request resent within the timestamp window would pass.
    if not cache.add(f"slack:sig:{headers.get('x-slack-signature')}", 1, timeout=REPLAY_WINDOW_S):
        return JsonResponse({"error": "replayed request"}, status=401)
    return SlackRequestHandler(bolt_app()).handle(request)


def _org_actor(request, slug: str) -> Actor | None:
    membership = Membership.objects.filter(user=request.user, org__slug=slug).select_related("org").first()
    if membership is None:
        return None
    return Actor(
        type=ActorType.USER,
        org_id=membership.org_id,
        user=request.user,
        membership=membership,
        label=request.user.email,
        ip=client_ip(request),
    )


@login_required
def slack_install(request):
    """Start the OAuth v2 install for `?org=<slug>` (an org admin, signed in)."""
    actor = _org_actor(request, request.GET.get("org", ""))
    if actor is None or not settings.SLACK_CLIENT_ID:
        return HttpResponse(status=404)
    try:
        state, nonce = services.install_state(actor=actor)
    except (APIException, DomainError):
        return HttpResponse(status=403)
    query = urlencode(
        {
            "client_id": settings.SLACK_CLIENT_ID,
            "scope": SCOPES,
            "state": state,
            "redirect_uri": f"{settings.PUBLIC_URL}/hooks/slack/oauth",
        }
    )
    answer = HttpResponseRedirect(f"{settings.SLACK_AUTHORIZE_URL}?{query}")
    # Lax: sent on Slack's top-level redirect back to us, never on a cross-site subrequest.
    answer.set_cookie(
        STATE_COOKIE,
        nonce,
        max_age=services.INSTALL_STATE_MAX_AGE_S,
        path="/hooks/slack/",
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return answer


def slack_oauth(request):
    """Slack redirects here with `code` and our `state`: exchange the code and store the install. The state
    must come back to the browser that started the install (its cookie), or someone could hand an admin a
    callback URL carrying their own workspace's code, or use an admin's leaked state elsewhere."""
    code, state = request.GET.get("code", ""), request.GET.get("state", "")
    if not code or not state:
        return HttpResponseBadRequest("missing code or state")
    nonce = request.COOKIES.get(STATE_COOKIE, "")
    try:
        services.install_state_check(state, nonce)  # before the code is spent
    except (APIException, DomainError) as exc:
        return HttpResponseBadRequest(html.escape(str(exc.detail)))
    try:
        answer = web_client().oauth_v2_access(
            client_id=settings.SLACK_CLIENT_ID,
            client_secret=settings.SLACK_CLIENT_SECRET,
            code=code,
            redirect_uri=f"{settings.PUBLIC_URL}/hooks/slack/oauth",
        )
        if not isinstance(answer.data, dict):
            return HttpResponseBadRequest("Slack's answer was not a JSON object")
        install = services.install_complete(state=state, nonce=nonce, oauth=answer.data)

    except (APIException, DomainError) as exc:
        return HttpResponseBadRequest(html.escape(str(exc.detail)))
    except Exception as exc:  # slack_sdk's SlackApiError: Slack said no
        return HttpResponseBadRequest(html.escape(type(exc).__name__))
    done = HttpResponse(f"Hangar is installed in {html.escape(install.team_name or install.team_id)}.")
    done.delete_cookie(STATE_COOKIE, path="/hooks/slack/")
    return done


@login_required
def slack_link(request):
    """GET: confirm; POST: link the signed-in member to the Slack user the bot's link names."""
    token = request.GET.get("t", "")
    if request.method == "POST":
        actor = Actor(
            type=ActorType.USER,
            org_id=None,
            user=request.user,
            label=request.user.email,
            ip=client_ip(request),
        )
        try:
            services.user_link(actor=actor, token=token)
        except (APIException, DomainError):
            return HttpResponse("This link is invalid, expired, or not for your organization.", status=404)
        return HttpResponse("Linked: your Slack messages now run as you in Hangar.")
    # The page says which Slack identity will act as this member: a link someone else's Slack user was
    # sent would otherwise let them run prompts as whoever opens it.
    target = services.link_target(token)
    if target is None:
        return HttpResponse("This link is invalid or has expired.", status=404)
    install, slack_user = target
    workspace = install.team_name or install.team_id
    return HttpResponse(
        '<form method="post">'
        f'<input type="hidden" name="csrfmiddlewaretoken" value="{html.escape(_csrf(request))}">'
        f"<p>Link the Slack user <strong>{html.escape(slack_user)}</strong> of the workspace "
        f"<strong>{html.escape(workspace)}</strong> to your Hangar account "
        f"<strong>{html.escape(request.user.email)}</strong>? Its Slack messages will run as you.</p>"
        "<p>Only link a Slack user that is yours.</p>"
        '<button type="submit">Link</button></form>'
    )


def _csrf(request) -> str:
    from django.middleware.csrf import get_token

    return get_token(request)
