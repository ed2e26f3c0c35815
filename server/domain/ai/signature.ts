/**
 * The mailbox owner's signature, kept from the model wherever it appears. It is learnt from
 * the owner's own messages in the prompt and from the signature set in their settings:
 * the lines after a `-- ` delimiter, or the short lines after a closing ("Best regards,")
 * at the end of a message. Every message's text then loses those lines, wherever they
 * stand (a reply may quote them without `>`), and an owner's message loses its closing block.
 */

/** A closing line: "Best regards,", "Thanks!", "Cheers", "Mit freundlichen Grüßen", ... */
const CLOSING =
  /^((best|kind|warm|warmest|many|with (best|kind))\s+)?(regards|wishes)[\s,.!]*$|^(thanks|many thanks|thank you|thx|cheers|best|all the best|sincerely|yours( truly| sincerely)?|br|mfg|mit freundlichen grüßen|viele grüße|cordialement|saludos|un saluto)[\s,.!]*$/i;
/** At most this many lines after a delimiter or a closing are taken as the signature. */
const MAX_LINES = 8;
const norm = (line: string) => line.replace(/\s+/g, ' ').trim().toLowerCase();
const lines = (text: string) => text.replace(/\r\n?/g, '\n').split('\n');

/** The signature block at the end of one of the owner's messages (its lines, normalised), or none. */
export function trailingSignature(text: string): string[] {
  const all = lines(text);
  const delimiter = all.findIndex((l) => /^-- ?$/.test(l));
  if (delimiter >= 0)
    return all
      .slice(delimiter + 1, delimiter + 1 + MAX_LINES)
      .map(norm)
      .filter(Boolean);
  const body = all.map(norm);
  while (body.length && !body[body.length - 1]) body.pop();
  for (let i = body.length - 1; i >= Math.max(0, body.length - MAX_LINES - 1); i--) {
    if (CLOSING.test(body[i]!)) return body.slice(i + 1).filter(Boolean);
  }
  return [];
}

/** Signature lines to keep from the model: the configured signature's and those learnt from `ownerTexts`. */
export function ownerSignatureLines(ownerTexts: string[], configured?: string | null): Set<string> {
  const found = new Set<string>();
  for (const l of lines(configured ?? '')) if (norm(l)) found.add(norm(l));
  for (const text of ownerTexts) for (const l of trailingSignature(text)) if (l.length >= 3) found.add(l);
  return found;
}

/** `text` without the signature lines (and, for the owner's own message, from its closing on). */
export function stripSignature(text: string, signature: Set<string>, fromOwner: boolean): string {
  let kept = lines(text).filter((l) => !signature.has(norm(l)) && !/^-- ?$/.test(l));
  if (fromOwner) {
    const closing = kept.findLastIndex((l, i) => i >= kept.length - MAX_LINES - 1 && CLOSING.test(norm(l)));
    if (closing >= 0) kept = kept.slice(0, closing + 1);
  }
  return kept.join('\n');
}
