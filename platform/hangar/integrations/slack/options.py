"""What a Slack message asks: the prompt text and its inline options (`project=slug`, `agent=plan`,
`model=provider/model`), with the bot's mention removed. `stop` alone means abort."""

import re
from dataclasses import dataclass, field

MENTION = re.compile(r"<@[A-Z0-9]+>")
OPTION = re.compile(r"(?<!\S)(project|agent|model)=(\S{1,200})(?!\S)")
MAX_PROMPT = 20_000


@dataclass(frozen=True)
class Ask:
    text: str
    options: dict = field(default_factory=dict)

    @property
    def is_stop(self) -> bool:
        return self.text.strip().lower() in ("stop", "abort", "cancel") and not self.options


def parse(text: str) -> Ask:
    text = MENTION.sub("", text or "")
    options = {key: value for key, value in OPTION.findall(text)}
    prompt = " ".join(OPTION.sub("", text).split()) if options else text.strip()
    return Ask(text=prompt[:MAX_PROMPT], options=options)
