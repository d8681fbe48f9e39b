/** A token count as the session's views show it: "1.2k" from a thousand on. */
export function fmtTokens(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}
