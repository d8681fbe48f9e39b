import { useEffect, useRef, useState } from "react";
import { Terminal as XTerm } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import "@xterm/xterm/css/xterm.css";

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
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(
      `${proto}://${location.host}/ws/sessions/${encodeURIComponent(sessionId)}/terminal/?cols=${term.cols}&rows=${term.rows}`,
    );
    socket.onopen = () => {
      setState("open");
      term.focus();
    };
    socket.onmessage = (m) => term.write(typeof m.data === "string" ? m.data : "");
    socket.onclose = (e) => setState(e.code === 4404 ? "not found" : e.code === 4403 ? "not allowed" : "closed");
    const input = term.onData((data) => socket.readyState === 1 && socket.send(JSON.stringify({ type: "input", data })));
    const onResize = () => {
      fit.fit();
      if (socket.readyState === 1) socket.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
    };
    window.addEventListener("resize", onResize);
    return () => {
      window.removeEventListener("resize", onResize);
      input.dispose();
      socket.close();
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
