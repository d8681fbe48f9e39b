"""The web app opens its WebSockets (the session's stream, the org's) with a one-use ticket from
`POST /api/auth/ws-ticket`, never a credential in the URL, and the stream it opens that way is live: a
rename made elsewhere reaches the open session page over it."""

import pytest

from hangar.conversations.services import session_create
from hangar.conversations.session_services import session_update

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_web_app_opens_its_streams_with_one_use_tickets(alice, open_app):
    session = session_create(actor=alice.actor, project=alice.project, title="Ticketed stream")
    app = open_app(alice)
    page = app.page
    sockets, frames = [], []

    def opened(ws):
        sockets.append(ws)
        ws.on("framereceived", lambda payload: frames.append((ws.url, payload)))

    page.on("websocket", opened)
    page.goto(f"/o/acme/p/{alice.project.pk}/s/{session.pk}")
    page.get_by_text("Ticketed stream").first.wait_for()
    stream = f"/ws/sessions/{session.pk}/"

    def within(seconds: float, condition) -> bool:
        for _ in range(int(seconds * 20)):  # the page's own waits let its socket events through
            if condition():
                return True
            page.wait_for_timeout(50)
        return condition()

    assert within(60, lambda: any(stream in ws.url for ws in sockets)), [ws.url for ws in sockets]
    # A rename elsewhere arrives live over the ticketed session stream. The page may show it first from
    # the org's stream (the session list), so the session stream's frame is waited for, not assumed.
    session_update(actor=alice.actor, session=session, title="Renamed live")
    page.get_by_text("Renamed live").first.wait_for()
    assert within(30, lambda: any(stream in url and "Renamed live" in str(p) for url, p in frames)), frames
    paths = [ws.url.split("://", 1)[1].split("/", 1)[1] for ws in sockets]
    assert any(path.startswith(f"ws/sessions/{session.pk}/") for path in paths), paths
    assert any(path.startswith("ws/orgs/acme/") for path in paths), paths
    assert all("ticket=wst_" in path and "token=" not in path for path in paths), paths
    tickets = [path.split("ticket=", 1)[1] for path in paths]
    assert len(set(tickets)) == len(tickets)  # one ticket per socket
