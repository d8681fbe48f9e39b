"""The model catalogue's sources, in order: the project's limits, LiteLLM's model map, the stated default.
Not in the fast tier: LiteLLM's import alone takes seconds, which the last test pays to compare maps."""

import os
import subprocess
import sys

from hangar.engine.providers import model_table
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


def test_the_model_map_is_litellms_own_read_without_importing_litellm():
    """model_table reads the JSON LiteLLM loads when told to stay local: the same table, and a process that
    only prices steps and sizes context windows never imports LiteLLM (a worker whose calls all go to
    OpenAI-compatible endpoints directly)."""
    code = (
        "import sys; from hangar.engine.providers import model_table; table = model_table.model_cost(); "
        "print(len(table), 'litellm' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": "platform:."},
    )
    assert out.returncode == 0, out.stderr
    size, imported = out.stdout.split()
    assert int(size) > 1000 and imported == "False"

    from hangar.engine.providers.litellm_transport import litellm_module

    assert model_table.model_cost() == litellm_module().model_cost
