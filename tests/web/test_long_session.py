"""A 500-message session opens and scrolls in the browser: rows off screen are skipped by the layout
(content-visibility), so scrolling end to end keeps frames short."""

import pytest

from hangar.conversations.services import message_create, now_ms, session_create

pytestmark = pytest.mark.django_db(transaction=True)
ANSWER = "Here is **step {i}**:\n\n```python\ndef step_{i}():\n    return {i} * 2\n```\n\nAnd a list:\n\n- one\n- two\n"


def test_a_500_message_session_opens_and_scrolls_with_short_frames(alice, open_app):
    session = session_create(actor=alice.actor, project=alice.project, title="Long session")
    previous = None
    for i in range(250):
        user = message_create(
            session=session,
            data={
                "role": "user",
                "time": {"created": now_ms()},
                "agent": "build",
                "model": {"providerID": "p", "modelID": "m"},
            },
            parts=[{"type": "text", "text": f"question {i}"}],
        )
        previous = message_create(
            session=session,
            data={
                "role": "assistant",
                "time": {"created": now_ms()},
                "parentID": user.pk,
                "modelID": "m",
                "providerID": "p",
                "mode": "build",
                "agent": "build",
                "path": {"cwd": "/workspace", "root": "/workspace"},
            },
            parts=[{"type": "text", "text": ANSWER.format(i=i)}],
        )
    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/s/{session.pk}")
    page.get_by_text("question 249").wait_for()
    log = page.get_by_role("log", name="Conversation")
    assert log.locator("article.msg").count() == 500 and previous is not None
    # Scroll from the bottom to the top and back in steps, recording every frame's interval.
    frames = page.evaluate(
        """async () => {
          const box = document.querySelector('[role=log]');
          const gaps = []; let last = performance.now(); let running = true;
          const tick = (t) => { gaps.push(t - last); last = t; if (running) requestAnimationFrame(tick); };
          requestAnimationFrame(tick);
          // A fast scroll: one screenful a frame, 60 screens up then 60 down.
          for (const direction of [-1, 1]) {
            for (let k = 0; k < 60; k++) {
              box.scrollTop += direction * box.clientHeight;
              await new Promise(r => requestAnimationFrame(r));
            }
          }
          running = false;
          return gaps.slice(2).sort((a, b) => a - b);
        }"""
    )
    p90 = frames[int(len(frames) * 0.9)]
    # A frame every 16.7 ms on an idle machine; on 2 shared cores at load average ~15 this measured
    # p90 167 ms. The bound catches a stall (every row laid out on every frame), not jank.
    assert p90 < 250, f"p90 frame interval {p90:.0f} ms over {len(frames)} frames"
    app.shot("long-session")
