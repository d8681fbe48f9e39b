"""What a fast test (tests/tiers.py) runs without: the Docker engine (tests/conftest.py points DOCKER_HOST
nowhere around it) and the database (pytest-django refuses it to a test not marked django_db). Both tests
are fast by the tiers' own guess: nothing here asks for more."""

import os

import docker
import pytest

from hangar.accounts.models import User


def test_a_fast_test_finds_the_docker_engine_out_of_reach(request):
    assert request.node.get_closest_marker("fast") is not None
    assert os.environ["DOCKER_HOST"] == "unix:///nonexistent/docker.sock"
    with pytest.raises(docker.errors.DockerException):
        docker.from_env()


def test_a_fast_test_is_refused_the_database(request):
    assert request.node.get_closest_marker("fast") is not None
    with pytest.raises(RuntimeError, match="Database access not allowed"):
        User.objects.count()
