/**
 * Prompt text bounded in tokens, not characters: 6,000 characters of mail measured from
 * 1,050 to 6,987 o200k_base tokens, depending on the script and on how much of it JSON has
 * to escape. A real tokenizer costs 0.4 s and 64 MB per process to load, and no cheaper
 * estimate holds for every text (random ASCII runs at 0.8 tokens a character, `<` escaped
 * at 3, a combining mark at 2), so the service bounds what is certain: a byte-level BPE
 * token is at least one byte, so the UTF-8 bytes of the text as JSON carries it are an
 * upper bound of its tokens in any such tokenizer. English runs at about 0.25 tokens a byte,
 * so a budget in bytes leaves room; `npm run bench` counts the prompts with o200k_base.
 */

/** Controls other than tab and newline: JSON escapes each as six characters and they carry nothing. */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

export const dropControls = (text: string): string => text.replace(CONTROLS, '');

/** \b \t \n \f \r: the controls JSON escapes in two characters (the others take six). */
const ESCAPED_SHORT = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);

/** UTF-8 bytes of one UTF-16 code unit as JSON-encoded in the prompt (`<` as \\u003c). */
function charCost(code: number): number {
  if (code < 0x80)
    return code === 0x3c || (code < 0x20 && !ESCAPED_SHORT.has(code))
      ? 6
      : code === 0x22 || code === 0x5c || code < 0x20
        ? 2
        : 1;
  if (code < 0x800) return 2;
  return code >= 0xd800 && code <= 0xdfff ? 2 : 3;
}

/** At or above the token count of `text` as the prompt carries it, in any byte-level BPE tokenizer. */
export function estimateTextTokens(text: string): number {
  let cost = 0;
  for (let i = 0; i < text.length; i++) cost += charCost(text.charCodeAt(i));
  return cost;
}

/** `text` cut (on a line or word end where one is near) so that it and `marker` stay within `maxTokens` by that bound. */
export function fitTokens(text: string, maxTokens: number, marker = '\n[…truncated]'): string {
  const budget = maxTokens - estimateTextTokens(marker);
  let cost = 0;
  let cutAt = -1;
  for (let i = 0; i < text.length && cost <= maxTokens; i++) {
    cost += charCost(text.charCodeAt(i));
    if (cutAt < 0 && cost > budget) cutAt = i;
  }
  if (cost <= maxTokens) return text;
  const cut = text.slice(0, cutAt);
  const soft = Math.max(cut.lastIndexOf('\n'), cut.lastIndexOf(' '));
  const kept = (soft > cutAt * 0.8 ? cut.slice(0, soft) : cut).trimEnd();
  const code = kept.charCodeAt(kept.length - 1);
  return `${code >= 0xd800 && code <= 0xdbff ? kept.slice(0, -1) : kept}${marker}`;
}
