"""The setup phase's own network (issue 28 item 5): hosts a project opens for its setup script only (package
registries, say) are reachable through the egress proxy while the script runs, and the sandbox is back on the
project's own policy (here: no network) before the first tool call. A bad host is a 400 naming the field."""

import pytest

from hangar.conversations.services import session_create
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.repos.models import SessionWorkspace

pytestmark = [pytest.mark.timeout(240), pytest.mark.django_db(transaction=True)]

# Through the egress proxy: 403 for a host not on the allowlist; listed, the proxy tries to connect (no
# route out of this machine: an error or a timeout, never the proxy's 403).
FETCH = (
    'python3 -c "import urllib.request, urllib.error\n'
    "try: urllib.request.urlopen('http://{host}/', timeout=5); print('FETCH ok')\n"
    "except urllib.error.HTTPError as e: print('FETCH', e.code)\n"
    "except OSError as e: print('FETCH err', e)\""
)


def test_setup_only_hosts_are_open_for_the_script_and_closed_after_it(alice, api, sessions_made):
    project = alice.project
    project.setup_script = "\n".join(
        ["echo PROXY=[$HTTP_PROXY]", FETCH.format(host="1.1.1.1"), FETCH.format(host="8.8.8.8")]
    )
    project.setup_network_allowlist = ["1.1.1.1"]
    project.network_policy = "none"
    project.save()
    session = session_create(actor=alice.actor, project=project, title="t")
    sessions_made.append(session.pk)
    box = sandbox_for(session)
    log = SessionWorkspace.objects.get(session=session).setup_log
    lines = log.splitlines()
    assert lines[0].startswith("PROXY=[http") and lines[0] != "PROXY=[]", log
    assert not lines[1].startswith("FETCH 403"), log  # listed for setup: the proxy let it through
    assert lines[2] == "FETCH 403", log  # not listed: refused
    after = box.exec("echo PROXY=[$HTTP_PROXY]; " + FETCH.format(host="1.1.1.1")).output.splitlines()
    assert after[0] == "PROXY=[]" and after[1].startswith("FETCH err"), after  # no network at all now
    assert box.spec.network == "none"


def test_a_bad_setup_host_is_a_400_naming_the_field(api, alice):
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    response = api(alice).patch(url, {"setup_network_allowlist": ["pypi.org", "127.0.0.1"]}, format="json")
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == [
        "setup_network_allowlist[1]"
    ]
    ok = api(alice).patch(url, {"setup_network_allowlist": ["pypi.org"]}, format="json")
    assert ok.status_code == 200 and ok.json()["setup_network_allowlist"] == ["pypi.org"]
