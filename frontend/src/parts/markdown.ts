// Markdown from the model is untrusted: parsed by marked, sanitised by DOMPurify, code highlighted by a
// highlight.js core with a few common languages (the full set would triple the bundle).
import DOMPurify from "dompurify";
import { Marked } from "marked";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import javascript from "highlight.js/lib/languages/javascript";
import typescript from "highlight.js/lib/languages/typescript";
import python from "highlight.js/lib/languages/python";
import json from "highlight.js/lib/languages/json";
import diff from "highlight.js/lib/languages/diff";
import yaml from "highlight.js/lib/languages/yaml";
import go from "highlight.js/lib/languages/go";
import rust from "highlight.js/lib/languages/rust";
import xml from "highlight.js/lib/languages/xml";
import css from "highlight.js/lib/languages/css";
import sql from "highlight.js/lib/languages/sql";

for (const [name, lang] of Object.entries({ bash, javascript, typescript, python, json, diff, yaml, go, rust, xml, css, sql })) {
  hljs.registerLanguage(name, lang);
}
hljs.registerAliases(["sh", "shell", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html"], { languageName: "xml" });

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }) {
      const language = (lang || "").split(/\s/)[0];
      const html = language && hljs.getLanguage(language) ? hljs.highlight(text, { language }).value : escapeHtml(text);
      return `<pre class="code"><code class="hljs">${html}</code></pre>`;
    },
  },
});

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

export function renderMarkdown(text: string): string {
  return DOMPurify.sanitize(marked.parse(text, { async: false }) as string);
}

export function highlight(text: string, language: string): string {
  return hljs.getLanguage(language) ? hljs.highlight(text, { language }).value : escapeHtml(text);
}
