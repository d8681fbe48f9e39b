import { useEffect, useState } from "react";
import { get, type FileContent, type FileEntry, type FileList } from "../api/client";

const q = (path: string) => `?path=${encodeURIComponent(path)}`;

// The session's workspace as a tree (each directory read when first opened) beside the file picked.
export function Files({ base }: { base: string }) {
  const [open, setOpen] = useState<string | null>(null);
  const [file, setFile] = useState<FileContent | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    if (open === null) return;
    setFile(null);
    setError("");
    get<FileContent>(`${base}workspace/file/${q(open)}`).then(setFile).catch((e) => setError(e.message));
  }, [base, open]);
  return (
    <div className="files">
      <nav className="filetree" aria-label="Workspace files">
        <Directory base={base} path="" depth={0} selected={open} onPick={setOpen} />
      </nav>
      <section className="fileview" aria-label="File">
        {open === null && <p className="empty center">Pick a file to see it.</p>}
        {error && <p className="error" role="alert">{error}</p>}
        {file && (
          <>
            <h2 className="mono small">{file.path} <span className="muted">· {file.size} bytes</span></h2>
            {file.tooLarge ? (
              <p className="muted">Too large to show here; download the workspace to read it.</p>
            ) : file.type === "binary" ? (
              <p className="muted">Binary file: not shown.</p>
            ) : (
              <pre className="code" data-testid="file-content">{file.content}</pre>
            )}
          </>
        )}
      </section>
    </div>
  );
}

function Directory(props: { base: string; path: string; depth: number; selected: string | null; onPick: (p: string) => void }) {
  const [list, setList] = useState<FileList | null>(null);
  const [error, setError] = useState("");
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  useEffect(() => {
    get<FileList>(`${props.base}workspace/files/${q(props.path)}`).then(setList).catch((e) => setError(e.message));
  }, [props.base, props.path]);
  if (error) return <p className="error small" role="alert">{error}</p>;
  if (!list) return <p className="muted small" role="status">Loading…</p>;
  if (props.depth === 0 && list.entries.length === 0) return <p className="empty">The workspace is empty.</p>;
  const toggle = (e: FileEntry) =>
    setExpanded((now) => {
      const next = new Set(now);
      if (!next.delete(e.path)) next.add(e.path);
      return next;
    });
  return (
    <ul role={props.depth === 0 ? "tree" : "group"} aria-label={props.depth === 0 ? "Files" : undefined}>
      {list.entries.map((e) => (
        <li key={e.path} role="treeitem" aria-expanded={e.type === "directory" ? expanded.has(e.path) : undefined} aria-selected={props.selected === e.path}>
          <button
            type="button"
            className={`fileitem ${props.selected === e.path ? "active" : ""}`}
            style={{ paddingLeft: 8 + props.depth * 14 }}
            onClick={() => (e.type === "directory" ? toggle(e) : props.onPick(e.path))}
          >
            {e.type === "directory" ? (expanded.has(e.path) ? "▾ " : "▸ ") : ""}
            {e.name}
          </button>
          {e.type === "directory" && expanded.has(e.path) && (
            <Directory base={props.base} path={e.path} depth={props.depth + 1} selected={props.selected} onPick={props.onPick} />
          )}
        </li>
      ))}
      {list.truncated && <li className="muted small">More entries not shown.</li>}
    </ul>
  );
}
