"""Streamed text in the web app: a scripted LLM delta -> painted in Chromium, and the initial bundle size.

    .venv/bin/python bench/web_stream.py [--deltas 1000] [--every 0.005]

The platform as deployed (Daphne + one Celery worker, bench/agent_step.py's rig, database hangar_bench)
and the scripted model server, which streams N words `t<send time, epoch µs>`, one SSE delta each,
`--every` seconds apart. The built app (frontend/dist) runs in Debian's Chromium; a MutationObserver sees
each new word in the answer and, at the next animation frame (+ a task, so after the frame's paint),
records now - send time. Both clocks are this machine's. The figure therefore includes the engine's delta
coalescing (at most one notification per 50 ms per part), the channel layer, the WebSocket and React.

Bundle: the gzipped (level 9) size of what dist/index.html loads before anything else (its scripts and
stylesheets; the lazily loaded terminal is not counted). Also printed: for each WebSocket frame, when it
reached the page minus the send time of the newest word it carries (transport alone, best case per
frame). The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from agent_step import Scripted  # noqa: E402
from common import log  # noqa: E402
from hangar_side import Hangar  # noqa: E402

from tests.web.chromium import CHROMIUM, FLAGS  # noqa: E402

OBSERVER = """
window.__lat = []; window.__words = 0; window.__arrive = [];
// When each WebSocket frame reaches the page: now minus the send time of the newest word it carries.
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', (m) => {
      const words = typeof m.data === 'string' ? m.data.match(/t\\d{16}/g) : null;
      if (!words) return;
      const now = (performance.timeOrigin + performance.now()) * 1000;
      window.__arrive.push((now - Number(words[words.length - 1].slice(1))) / 1000);
    });
  }
};
new MutationObserver(() => {
  const el = [...document.querySelectorAll('article.msg.assistant .md')].pop();
  if (!el) return;
  const words = el.textContent.match(/t\\d{16}/g) || [];
  if (words.length <= window.__words) return;
  const fresh = words.slice(window.__words);
  window.__words = words.length;
  requestAnimationFrame(() => setTimeout(() => {
    const now = (performance.timeOrigin + performance.now()) * 1000;
    for (const w of fresh) window.__lat.push((now - Number(w.slice(1))) / 1000);
  }, 0));
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def bundle_gzip_bytes() -> dict:
    dist = ROOT / "frontend" / "dist"
    index = (dist / "index.html").read_text()
    files = re.findall(r'(?:src|href)="/static/([^"]+\.(?:js|css))"', index)
    sizes = {name: len(gzip.compress((dist / name).read_bytes(), 9)) for name in files}
    return {"files": sizes, "total": sum(sizes.values())}


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=1000)
    parser.add_argument("--every", type=float, default=0.005)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    scripted = Scripted()
    hangar = Hangar(scripted)
    try:
        from hangar.accounts.models import User

        user = User.objects.get(email="bench@bench.test")
        user.set_password("bench-password")
        user.save()
        hangar.use_script(scripted.load([[{"stamps": args.deltas, "every": args.every}]]))
        base = f"http://127.0.0.1:{hangar.port}"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(base_url=base, viewport={"width": 1280, "height": 800})
            page.set_default_timeout(60_000)
            page.add_init_script(OBSERVER)
            page.goto("/login")
            page.get_by_label("Email").fill("bench@bench.test")
            page.get_by_label("Password").fill("bench-password")
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("button", name="Sign out").wait_for()
            page.goto(f"/o/bench/p/{hangar.project.pk}")
            page.get_by_role("button", name="New session").click()
            page.wait_for_url("**/s/ses_*")
            page.get_by_role("textbox", name="Message").fill("stream")
            page.get_by_role("textbox", name="Message").press("Enter")
            page.wait_for_function(f"window.__lat.length >= {args.deltas}", timeout=120_000)
            latencies = page.evaluate("window.__lat")
            arrivals = page.evaluate("window.__arrive")
            browser.close()
    finally:
        hangar.stop()
        scripted.stop()
    bundle = bundle_gzip_bytes()
    result = {
        "deltas": len(latencies),
        "every_ms": args.every * 1000,
        "delta_to_paint_ms": {
            "p50": round(percentile(latencies, 0.5), 1),
            "p99": round(percentile(latencies, 0.99), 1),
            "max": round(max(latencies), 1),
            "mean": round(statistics.fmean(latencies), 1),
        },
        "frames": len(arrivals),
        "newest_delta_to_frame_arrival_ms": {
            "p50": round(percentile(arrivals, 0.5), 1),
            "p99": round(percentile(arrivals, 0.99), 1),
        },
        "initial_bundle_gzip_bytes": bundle["total"],
        "initial_bundle_files": bundle["files"],
    }
    log(
        f"delta -> painted over {len(latencies)} deltas: p50 {result['delta_to_paint_ms']['p50']} ms, "
        f"p99 {result['delta_to_paint_ms']['p99']} ms; initial bundle {bundle['total'] / 1024:.1f} KiB gzipped"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
