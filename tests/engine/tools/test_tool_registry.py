"""Which tools a step offers, their schemas, and tool-name repair."""

from hangar.engine.tools.registry import (
    ALL,
    get_tools,
    offered_names,
    prefers_apply_patch,
    repair_tool_name,
    tool_schemas,
)


def test_build_on_a_claude_model_gets_edit_and_write_not_apply_patch():
    tools = get_tools("build", "anthropic/claude-sonnet-4-5")
    assert {"edit", "write"} <= set(tools) and "apply_patch" not in tools
    assert set(tools) == {
        "bash",
        "read",
        "write",
        "edit",
        "glob",
        "grep",
        "todowrite",
        "webfetch",
        "question",
        "plan_exit",
        "plan_enter",
        "task",
        "skill",  # offered to the model only when the workspace has skills the agent may load
        "invalid",
    }


def test_list_todoread_and_batch_are_not_offered_by_default_as_in_opencode_1_18_33():
    # OpenCode 1.18.33's registry has no `list` or `todoread`; `batch` is experimental there. Seed 003
    # keeps `list` for the explore agent, and Hangar follows the seed.
    for agent in ("build", "plan", "general", "my-custom-agent"):
        assert not {"list", "todoread", "batch"} & set(get_tools(agent, "claude")), agent
    assert "list" in get_tools("explore", "claude") and "batch" not in get_tools("explore", "claude")


def test_gpt5_and_codex_models_get_apply_patch_instead_of_edit_and_write():
    for model in ("openai/gpt-5", "gpt-5.1-codex", "openai/codex-mini"):
        tools = get_tools("build", model)
        assert "apply_patch" in tools and "edit" not in tools and "write" not in tools
    assert not prefers_apply_patch("gpt-4o") and not prefers_apply_patch("openai/gpt-oss-120b")


def test_a_project_setting_overrides_the_model_family():
    assert "apply_patch" in get_tools("build", "claude-sonnet-4", prefer_patch=True)
    assert "edit" in get_tools("build", "gpt-5", prefer_patch=False)


def test_hidden_agents_get_no_tools_and_explore_is_read_only():
    assert get_tools("title", "gpt-5") == {}
    assert set(get_tools("explore", "claude")) == {
        "bash",
        "read",
        "glob",
        "grep",
        "list",
        "webfetch",
        "invalid",
    }
    assert "todowrite" not in get_tools("general", "claude") and "task" in get_tools("general", "claude")


def test_repair_fixes_the_case_of_a_tool_name_only():
    tools = get_tools("build", "claude")
    assert repair_tool_name("Read", tools) == "read"
    assert repair_tool_name("TODOWRITE", tools) == "todowrite"
    assert repair_tool_name("read", tools) == "read"
    assert repair_tool_name("reed", tools) is None


def test_schemas_use_opencodes_parameter_names_and_our_descriptions():
    schemas = {s["function"]["name"]: s["function"] for s in tool_schemas(ALL)}
    params = {name: set(f["parameters"]["properties"]) for name, f in schemas.items()}
    assert params == {
        "bash": {"command", "timeout", "workdir", "description"},
        "read": {"filePath", "offset", "limit"},
        "write": {"content", "filePath"},
        "edit": {"filePath", "oldString", "newString", "replaceAll"},
        "list": {"path", "ignore"},
        "glob": {"pattern", "path"},
        "grep": {"pattern", "path", "include"},
        "todowrite": {"todos"},
        "todoread": set(),
        "batch": {"tool_calls"},
        "webfetch": {"url", "format", "timeout"},
        "question": {"questions"},
        "plan_exit": set(),
        "plan_enter": set(),
        "apply_patch": {"patchText"},
        "task": {"description", "prompt", "subagent_type", "task_id", "command"},
        "skill": {"name"},
        "lsp": {"operation", "filePath", "line", "character"},
    }
    assert schemas["edit"]["parameters"]["required"] == ["filePath", "oldString", "newString"]
    assert schemas["bash"]["parameters"]["required"] == ["command", "description"]
    todo = schemas["todowrite"]["parameters"]["properties"]["todos"]["items"]
    assert set(todo["properties"]) == {"content", "status", "priority"} and "$ref" not in str(schemas)
    assert all(f["description"] and "{workspace}" not in f["description"] for f in schemas.values())
    assert "/workspace" in schemas["bash"]["description"]


def test_the_internal_invalid_tool_runs_but_is_never_offered_to_the_model():
    tools = get_tools("build", "claude")
    assert "invalid" in tools  # the loop routes an unroutable call to it
    assert "invalid" not in {s["function"]["name"] for s in tool_schemas(tools)}
    assert repair_tool_name("Invalid", offered_names(tools)) is None
