import { useState } from "react";
import { post, type AnswersInput, type QuestionRequest } from "../api/client";

type Option = { label: string; description?: string };
type Question = { question: string; header?: string; options?: Option[]; multiple?: boolean };

// The agent's `question` tool waiting for the person: each question's options as toggle buttons (several
// when the question allows it), an answer in the person's own words, and a dismiss that stops the turn.
// A lone single-choice question answers on the click, as OpenCode's own UI does.
export function QuestionCard({ base, request }: { base: string; request: QuestionRequest }) {
  const questions = request.questions as Question[];
  const [chosen, setChosen] = useState<string[][]>(() => questions.map(() => []));
  const [own, setOwn] = useState<string[]>(() => questions.map(() => ""));
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const oneClick = questions.length === 1 && !questions[0].multiple;

  const send = async (path: string, body?: AnswersInput) => {
    setBusy(true);
    setError("");
    try {
      await post(`${base}questions/${request.id}/${path}/`, body);
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  const answers = (picked: string[][]) =>
    picked.map((labels, i) => {
      const text = own[i].trim();
      if (!text) return labels;
      return questions[i].multiple ? [...labels, text] : [text];
    });
  const complete = answers(chosen).every((a) => a.length > 0);
  const pick = (index: number, label: string) => {
    if (oneClick) return void send("reply", { answers: [[label]] });
    setChosen((all) =>
      all.map((labels, i) => {
        if (i !== index) return labels;
        if (!questions[i].multiple) return labels[0] === label ? [] : [label];
        return labels.includes(label) ? labels.filter((l) => l !== label) : [...labels, label];
      }),
    );
  };
  const title = questions.length === 1 ? questions[0].header || "Question" : `${questions.length} questions`;
  return (
    <section className="question" role="alert" aria-label={`Question from the agent: ${title}`} data-question={request.id}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (complete && !busy) send("reply", { answers: answers(chosen) });
        }}
      >
        {questions.map((q, i) => (
          <fieldset key={i} className="q">
            <legend>
              {q.header && <span className="badge">{q.header}</span>} {q.question}
              {q.multiple && <span className="muted small"> (choose any)</span>}
            </legend>
            <div className="options" role="group" aria-label={q.header || q.question}>
              {(q.options ?? []).map((o) => (
                <button
                  key={o.label}
                  type="button"
                  className={`option ${chosen[i].includes(o.label) ? "chosen" : ""}`}
                  aria-pressed={oneClick ? undefined : chosen[i].includes(o.label)}
                  disabled={busy}
                  title={o.description || undefined}
                  onClick={() => pick(i, o.label)}
                >
                  <span>{o.label}</span>
                  {o.description && <span className="muted small">{o.description}</span>}
                </button>
              ))}
            </div>
            <label className="own">
              <span className="small">{q.multiple ? "Add your own answer" : "Or answer in your own words"}</span>
              <input value={own[i]} maxLength={10000} disabled={busy} onChange={(e) => setOwn(own.map((v, k) => (k === i ? e.target.value : v)))} />
            </label>
          </fieldset>
        ))}
        <div className="actions">
          {(!oneClick || own[0].trim() !== "") && (
            <button type="submit" disabled={busy || !complete}>Send answer{questions.length > 1 ? "s" : ""}</button>
          )}
          {oneClick && own[0].trim() === "" && <span className="muted small">Pick an option, or type your own answer.</span>}
          <span className="spacer" />
          <button type="button" className="ghost danger" disabled={busy} onClick={() => send("reject")}>Dismiss</button>
        </div>
      </form>
      {error && <p className="error">{error}</p>}
    </section>
  );
}
