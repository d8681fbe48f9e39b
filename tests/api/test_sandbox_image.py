"""A project's `sandbox_image` names a Docker image the sandbox runs: only an image the operator lists
(HANGAR_SANDBOX_IMAGES) is accepted, anything else is a 400 naming the field, and an image saved before the
list existed is never used."""

from hangar.conversations.models import Session
from hangar.engine.workspace.specs import spec_for
from hangar.projects.models import Project


def test_a_sandbox_image_the_operator_does_not_list_is_a_400_naming_it(api, alice, settings):
    settings.HANGAR_SANDBOX_IMAGES = ["hangar-sandbox-extra:1"]
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    for image in ("attacker/miner:latest", "docker.io/library/alpine", "hangar-sandbox-extra:2"):
        response = api(alice).patch(url, {"sandbox_image": image}, format="json")
        assert response.status_code == 400, (image, response.content)
        assert list(response.json()["error"]["fields"]) == ["sandbox_image"]
    created = api(alice).post(
        "/api/orgs/acme/projects/", {"name": "x", "sandbox_image": "evil:1"}, format="json"
    )
    assert created.status_code == 400 and list(created.json()["error"]["fields"]) == ["sandbox_image"]
    assert Project.objects.get(pk=alice.project.pk).sandbox_image == ""
    for image in ("hangar-sandbox-extra:1", ""):
        response = api(alice).patch(url, {"sandbox_image": image}, format="json")
        assert response.status_code == 200, response.content
        assert Project.objects.get(pk=alice.project.pk).sandbox_image == image


def test_an_unlisted_image_saved_before_is_never_used_for_a_sandbox(api, alice, settings):
    settings.HANGAR_SANDBOX_IMAGES = ["hangar-sandbox-extra:1"]
    base = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/"
    session = Session.objects.get(pk=api(alice).post(base, {"title": "t"}, format="json").json()["id"])
    Project.objects.filter(pk=alice.project.pk).update(sandbox_image="attacker/miner:latest")
    session.refresh_from_db()
    session.project.refresh_from_db()
    assert spec_for(session).image is None  # the platform's own image
    Project.objects.filter(pk=alice.project.pk).update(sandbox_image="hangar-sandbox-extra:1")
    session.project.refresh_from_db()
    assert spec_for(session).image == "hangar-sandbox-extra:1"
