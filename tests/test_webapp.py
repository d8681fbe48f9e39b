"""The built web app is served at / and at every client route; the server's own prefixes are not; its
bundle goes compressed and cacheable for good."""

import gzip

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(tmp_path, monkeypatch):
    (tmp_path / "index.html").write_text(
        '<!doctype html><div id="root"></div><script src="/static/assets/x.js">'
    )
    monkeypatch.setattr(settings, "FRONTEND_DIST", tmp_path)
    return tmp_path


def test_the_app_page_answers_at_root_and_client_routes_with_a_csrf_cookie(client, built):
    for path in ("/", "/login", "/o/acme/p/3/s/ses_abc/terminal"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert b'<div id="root">' in response.content
        assert response["Cache-Control"] == "no-cache"
    assert "csrftoken" in client.cookies


def test_api_admin_and_opencode_prefixes_never_fall_back_to_the_app(client, built):
    assert client.get("/api/health").headers["Content-Type"].startswith("application/json")
    missing = client.get("/api/no-such-route/")
    assert missing.status_code == 404 and b'id="root"' not in missing.content
    assert client.get("/admin/login/").status_code == 200
    assert b'id="root"' not in client.get("/oc/1/config").content


def test_an_unbuilt_app_says_how_to_build_it(client, tmp_path, monkeypatch):
    monkeypatch.setattr(settings, "FRONTEND_DIST", tmp_path / "missing")
    response = client.get("/")
    assert response.status_code == 503 and b"deploy/setup.sh" in response.content


def test_the_bundle_goes_gzipped_to_a_browser_that_accepts_it_and_is_cached_for_good(client):
    bundles = list((settings.FRONTEND_DIST / "assets").glob("index-*.js"))
    assert bundles, "the web app is not built: run deploy/test.sh (it runs frontend/build.sh)"
    bundle = bundles[0]
    url = "/static/assets/" + bundle.name

    zipped = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert zipped.status_code == 200 and zipped["Content-Encoding"] == "gzip"
    body = b"".join(zipped.streaming_content)
    assert gzip.decompress(body) == bundle.read_bytes()
    assert len(body) < bundle.stat().st_size / 2
    assert "immutable" in zipped["Cache-Control"]  # its name changes with its content

    plain = client.get(url)
    assert not plain.has_header("Content-Encoding")
    assert b"".join(plain.streaming_content) == bundle.read_bytes()
