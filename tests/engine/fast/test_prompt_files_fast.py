"""A prompt's files read for it (hangar.engine.turn.prompt_files) and images and PDFs reaching the model only
when it takes them (hangar.engine.session.history, the catalogue's `attachments`), in process."""

from __future__ import annotations

import base64

import pytest

from hangar.engine.services import session_prompt
from hangar.engine.session.history import ATTACHED
from hangar.engine.workspace import sandboxes
from hangar.projects.models import Project
from tests.engine.fast.scripted_model import ScriptedModel, call

pytestmark = [pytest.mark.fast, pytest.mark.django_db]

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def rig(rig, monkeypatch):
    monkeypatch.setattr(sandboxes, "sandbox_factory", lambda _session: rig.sandbox)
    return rig


def takes_attachments(rig, yes: bool = True) -> None:
    Project.objects.filter(pk=rig.persona.project.pk).update(
        model_limits={"scripted/fast": {"context": 100_000, "attachments": yes}}
    )


def prompt(rig, *parts: dict) -> list[dict]:
    session_prompt(actor=rig.persona.actor, session=rig.session, parts=list(parts))
    return [p for p in rig.parts("text") + rig.parts("file")]


def first_user_content(rig) -> str | list:
    model = ScriptedModel([[{"text": "seen"}]])
    rig.run(model)
    return model.requests[0]["messages"][0]["content"]


def test_a_workspace_file_the_prompt_points_at_is_read_for_it(rig):
    rig.sandbox.write("/workspace/src/app.py", "def main():\n    return 42\n")
    prompt(
        rig,
        {"type": "text", "text": "explain @src/app.py"},
        {
            "type": "file",
            "mime": "text/plain",
            "filename": "src/app.py",
            "url": "file:///workspace/src/app.py",
        },
    )
    texts = [p for p in rig.parts("text") if p.get("synthetic")]
    assert (
        texts[0]["text"]
        == 'Called the Read tool with the following input: {"filePath": "/workspace/src/app.py"}'
    )
    assert "1: def main():\n2:     return 42" in texts[1]["text"]
    content = first_user_content(rig)
    assert "2:     return 42" in content and "[Attached file" not in content  # the content, once


def test_a_line_range_a_folder_and_a_missing_file(rig):
    rig.sandbox.write("/workspace/notes.txt", "one\ntwo\nthree\nfour\n")
    rig.sandbox.write("/workspace/pkg/a.py", "")
    prompt(
        rig,
        {"type": "text", "text": "look"},
        {"type": "file", "mime": "text/plain", "url": "file:///workspace/notes.txt?start=2&end=3"},
        {"type": "file", "mime": "text/plain", "url": "file:///workspace/pkg"},
        {"type": "file", "mime": "text/plain", "url": "file:///workspace/gone.txt"},
    )
    texts = [p["text"] for p in rig.parts("text") if p.get("synthetic")]
    assert '"offset": 2, "limit": 2' in texts[0] and "2: two\n3: three" in texts[1] and "four" not in texts[1]
    assert "a.py" in texts[3]  # the folder's listing
    assert texts[4].startswith("Read tool failed to read /workspace/gone.txt with the following error:")
    assert [p["mime"] for p in rig.parts("file")] == ["text/plain", "application/x-directory", "text/plain"]


def test_a_text_data_url_is_decoded_for_the_model(rig):
    data = base64.b64encode(b"pasted notes").decode()
    prompt(
        rig,
        {"type": "text", "text": "see"},
        {
            "type": "file",
            "mime": "text/plain",
            "filename": "clip.txt",
            "url": f"data:text/plain;base64,{data}",
        },
    )
    assert "pasted notes" in first_user_content(rig)


def test_an_image_the_prompt_points_at_reaches_a_model_that_takes_images(rig):
    takes_attachments(rig)
    rig.sandbox.write("/workspace/shot.png", PNG)
    prompt(
        rig,
        {"type": "text", "text": "what is this"},
        {"type": "file", "mime": "image/png", "filename": "shot.png", "url": "file:///workspace/shot.png"},
    )
    [image] = rig.parts("file")
    assert image["url"].startswith("data:image/png;base64,") and image["filename"] == "shot.png"
    content = first_user_content(rig)
    assert content[0]["type"] == "text" and "what is this" in content[0]["text"]
    assert content[1] == {"type": "image_url", "image_url": {"url": image["url"]}}


def test_a_model_that_takes_no_images_is_told_the_name_not_sent_the_bytes(rig):
    rig.sandbox.write("/workspace/shot.png", PNG)
    prompt(
        rig,
        {"type": "text", "text": "what is this"},
        {"type": "file", "mime": "image/png", "filename": "shot.png", "url": "file:///workspace/shot.png"},
    )
    content = first_user_content(rig)
    assert isinstance(content, str) and "base64" not in content
    assert "[shot.png was not sent: this model does not take images or PDFs. Tell the user.]" in content


@pytest.mark.parametrize("takes", [True, False])
def test_what_the_read_tool_attaches_follows_the_tool_results(rig, takes):
    takes_attachments(rig, takes)
    rig.sandbox.write("/workspace/shot.png", PNG)
    rig.prompt("look at the screenshot")
    model = ScriptedModel([[call("read", "c1", filePath="/workspace/shot.png")], [{"text": "a dot"}]])
    rig.run(model)
    messages = model.requests[1]["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    if takes:
        assert tool["content"] == "Image read successfully"
        attached = messages[-1]
        assert attached["role"] == "user" and attached["content"][0] == {"type": "text", "text": ATTACHED}
        assert attached["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    else:
        assert "was not sent: this model does not take images" in tool["content"]
        assert messages[-1] is tool or messages[-1]["role"] == "tool"
