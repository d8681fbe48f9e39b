"""The model catalogue's sources, in order: the project's limits, LiteLLM's model map, the stated default.
Not in the fast tier: LiteLLM's import alone takes seconds (a worker pays it once as it starts)."""

from hangar.engine.providers.catalogue import DEFAULT, ModelLimits, limits_for


def test_the_catalogue_takes_the_project_then_litellm_then_the_stated_default():
    config = {"openai/gpt-4o": {"context": 50_000, "output": 2_000}, "tiny": {"context": 4_000}}
    assert limits_for(config, "openai", "gpt-4o") == ModelLimits(50_000, 2_000, source="project")
    assert limits_for(config, "local", "tiny") == ModelLimits(4_000, 1_000, source="project")
    known = limits_for({}, "openai", "gpt-4o")
    assert known.source == "litellm" and known.context == 128_000 and known.output == 16_384
    assert limits_for({}, "local", "never-heard-of-it") == DEFAULT
    assert DEFAULT.context == 128_000 and DEFAULT.output == 32_000
    assert limits_for({}, "openai", "gpt-4o", litellm=False) == DEFAULT  # web processes do not import LiteLLM
