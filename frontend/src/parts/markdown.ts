// Markdown from the model is untrusted: parsed by marked, sanitised by DOMPurify, code highlighted by a
// highlight.js core with a few common languages (the full set would triple the bundle). An image from
// anywhere but the platform itself or a data: URL is shown as a link, never loaded: a prompt-injected
// answer could otherwise send workspace data to a server in the image's URL (the page's
// Content-Security-Policy refuses such images too: hangar/csp.py).
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

// Elements that load media from their own URLs: never rendered from model output.
const MEDIA = ["audio", "video", "source", "track", "picture", "iframe", "embed", "object"];

function isOwnImage(src: string): boolean {
  if (/^data:image\//i.test(src)) return true;
  try {
    return new URL(src, window.location.href).origin === window.location.origin;
  } catch {
    return false;
  }
}

function linkRemoteImages(fragment: DocumentFragment): void {
  for (const img of Array.from(fragment.querySelectorAll("img"))) {
    img.removeAttribute("srcset");
    const src = img.getAttribute("src") || "";
    if (isOwnImage(src)) continue;
    const label = img.getAttribute("alt") || src;
    if (/^https?:/i.test(src)) {
      const link = document.createElement("a");
      link.href = src;
      link.textContent = label;
      link.title = `Image not loaded: ${src}`;
      link.rel = "noopener noreferrer nofollow";
      link.target = "_blank";
      link.className = "remote-image";
      img.replaceWith(link);
    } else {
      img.replaceWith(document.createTextNode(label));
    }
  }
}

export function renderMarkdown(text: string): string {
  const fragment = DOMPurify.sanitize(marked.parse(text, { async: false }) as string, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: MEDIA,
    FORBID_ATTR: ["srcset", "poster", "background"],
  });
  linkRemoteImages(fragment);
  const holder = document.createElement("div");
  holder.appendChild(fragment);
  return holder.innerHTML;
}

export function highlight(text: string, language: string): string {
  return hljs.getLanguage(language) ? hljs.highlight(text, { language }).value : escapeHtml(text);
}
