import { useEffect, useRef, useState } from "react";
import { Terminal as XTerm } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import "@xterm/xterm/css/xterm.css";
import { socketUrl } from "../api/stream";

// A shell on the session sandbox's pty over /ws/sessions/<id>/terminal/: output arrives as text frames,
// keystrokes and resizes go out as JSON.
export default function Terminal({ sessionId }: { sessionId: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [state, setState] = useState("connecting");
  useEffect(() => {
    const term = new XTerm({ fontSize: 13, convertEol: false, cursorBlink: true, theme: { background: "#0d1117" } });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(host.current!);
    fit.fit();
    let socket: WebSocket | null = null;
    let disposed = false;
    socketUrl(`/ws/sessions/${encodeURIComponent(sessionId)}/terminal/?cols=${term.cols}&rows=${term.rows}`).then(
      (url) => {
        if (disposed) return;
        const opened = new WebSocket(url);
        socket = opened;
        opened.onopen = () => {
          setState("open");
          term.focus();
        };
        opened.onmessage = (m) => term.write(typeof m.data === "string" ? m.data : "");
        opened.onclose = (e) => setState(e.code === 4404 ? "not found" : e.code === 4403 ? "not allowed" : "closed");
      },
      () => setState("closed"),
    );
    const send = (frame: object) => socket?.readyState === 1 && socket.send(JSON.stringify(frame));
    const input = term.onData((data) => send({ type: "input", data }));
    const onResize = () => {
      fit.fit();
      send({ type: "resize", cols: term.cols, rows: term.rows });
    };
    window.addEventListener("resize", onResize);
    return () => {
      window.removeEventListener("resize", onResize);
      input.dispose();
      disposed = true;
      socket?.close();
      term.dispose();
    };
  }, [sessionId]);
  return (
    <div className="terminalwrap">
      <p className="muted small" role="status" data-testid="terminal-state">Terminal: {state}</p>
      <div ref={host} className="terminal" data-testid="terminal" />
    </div>
  );
}
