"""Placement (hangar.engine.workspace.placement): a pure function over the registry's view of each host."""

import pytest

from hangar.engine.workspace.placement import Asks, HostView, NoHost, place, refusal

ASKS = Asks(org_id="7", memory_mb=1024, disk_mb=2048)


def host(name="h1", state="active", labels=(), free_memory_mb=8000, free_disk_mb=50000, org_live=None):
    return HostView(name, state, frozenset(labels), free_memory_mb, free_disk_mb, org_live or {})


def test_it_picks_the_only_active_host():
    assert place([host("solo")], ASKS).name == "solo"


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ("draining", "solo is draining"),
        ("drained", "solo is drained"),
        ("lost", "solo is lost (its heartbeat stopped)"),
    ],
)
def test_it_refuses_the_only_host_when_it_is_not_active(state, words):
    with pytest.raises(NoHost) as refused:
        place([host("solo", state=state)], ASKS)
    assert str(refused.value).startswith("no sandbox host can take this session: ")
    assert words in str(refused.value)


def test_it_refuses_when_no_host_is_registered():
    with pytest.raises(NoHost, match="no sandbox host is registered"):
        place([], ASKS)


def test_every_required_label_must_be_among_the_hosts():
    asks = Asks(org_id="7", memory_mb=1, disk_mb=1, labels=frozenset({"gpu", "large"}))
    gpu_only = host("a", labels={"gpu"})
    both = host("b", labels={"gpu", "large", "ssd"}, free_memory_mb=10)
    assert place([gpu_only, both], asks).name == "b"
    with pytest.raises(NoHost, match="a lacks the project's required label large"):
        place([gpu_only], asks)
    with pytest.raises(NoHost, match="required labels gpu, large"):
        place([host("c")], asks)


def test_a_project_without_labels_goes_to_a_labelled_host():
    assert place([host("gpu-box", labels={"gpu"})], ASKS).name == "gpu-box"


def test_it_needs_room_for_the_shapes_memory_and_disk():
    assert refusal(host(free_memory_mb=1024, free_disk_mb=2048), ASKS) == ""  # exactly enough
    assert "1023 MB of memory free, the sandbox asks 1024 MB" in refusal(host(free_memory_mb=1023), ASKS)
    assert "2047 MB of disk free, the sandbox asks 2048 MB" in refusal(host(free_disk_mb=2047), ASKS)
    tight = host("tight", free_memory_mb=512)
    roomy = host("roomy", free_memory_mb=2048, org_live={"7": 30})
    assert place([tight, roomy], ASKS).name == "roomy"  # room first, however busy the roomy one is


def test_it_spreads_an_org_over_its_fewest_live_sandboxes_first():
    busy = host("busy", free_memory_mb=20000, org_live={"7": 3, "9": 0})
    calm = host("calm", free_memory_mb=4000, org_live={"7": 1, "9": 40})
    assert place([busy, calm], ASKS).name == "calm"
    other_org = Asks(org_id="9", memory_mb=1024, disk_mb=2048)
    assert place([busy, calm], other_org).name == "busy"


def test_equal_spread_goes_to_the_most_free_memory_then_the_name():
    a = host("a", free_memory_mb=4000)
    b = host("b", free_memory_mb=6000)
    assert place([a, b], ASKS).name == "b"
    assert place([host("z"), host("m")], ASKS).name == "m"  # a stable answer for equal hosts


def test_inactive_hosts_are_skipped_and_each_refusal_is_named():
    hosts = [host("d", state="draining"), host("l", state="lost"), host("ok", free_memory_mb=2000)]
    assert place(hosts, ASKS).name == "ok"
    with pytest.raises(NoHost) as refused:
        place(hosts[:2], ASKS)
    assert "d is draining" in str(refused.value) and "l is lost" in str(refused.value)


def test_an_unknown_state_refuses_rather_than_places():
    assert refusal(host(state="rebooting"), ASKS) == "is rebooting"
