/**
 * A thread answer's messages found in its bytes, so that each is decoded and parsed on its
 * own: decoded to one string and parsed to one object graph, an answer of tens of megabytes
 * kept all of its text, twice, and every message's garbage alive until the last was done.
 *
 * Only the usual shape is split: an object whose `messages` key, written plainly and once,
 * holds an array. Anything else (another shape, a key written with escapes, a piece that does
 * not parse) is left to the whole parse, which decides. The split is exact: each element is
 * JSON on its own (so its brackets balance and the array's closing bracket is the one found),
 * the separators are the array's own commas, and the rest of the answer, with the array
 * emptied, parses to `messages: []`; put back together, they are the answer's own value.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const KEY = new TextEncoder().encode('"messages"');
/** More pieces than any thread has messages (Gmail starts a new thread after 100): left to the whole parse. */
const MAX_PIECES = 10_000;

export interface SplitAnswer {
  /** The answer with its `messages` array emptied, decoded. */
  skeleton: string;
  /** Each element of `messages`, as bytes of the answer (not copied). */
  messages: Uint8Array[];
}

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** The closing quote of the string opening at `open`, or -1. */
function stringEnd(bytes: Uint8Array, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at < 0) return -1;
    let slashes = 0;
    while (bytes[at - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}

function isKey(bytes: Uint8Array, open: number, close: number): boolean {
  if (close - open + 1 !== KEY.length) return false;
  for (let i = 0; i < KEY.length; i++) if (bytes[open + i] !== KEY[i]) return false;
  return true;
}

/** The answer's messages and the rest of it, or null when it is not of the usual shape. */
export function splitThreadAnswer(bytes: Uint8Array): SplitAnswer | null {
  let depth = 0;
  /** 1: `"messages"` read at the top level; 2: and its colon; 3: inside its array; 4: past it. */
  let state = 0;
  const cuts: number[] = [];
  let started = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (isSpace(b)) continue;
    if (!started) {
      if (b !== OPEN_OBJECT) return null;
      started = true;
    }
    if (state === 1) state = b === COLON ? 2 : 0;
    else if (state === 2 && b !== OPEN_ARRAY) return null;
    if (b === QUOTE) {
      const close = stringEnd(bytes, i);
      if (close < 0) return null;
      if (depth === 1 && state !== 3) {
        if (isKey(bytes, i, close)) {
          if (state === 4) return null; // twice: the whole parse keeps the last
          state = 1;
        } else if (bytes.subarray(i, close).includes(BACKSLASH)) return null; // perhaps the key, escaped
      }
      i = close;
    } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      depth++;
      if (state === 2) {
        state = 3;
        cuts.push(i);
      }
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      if (state === 3 && depth === 2) {
        if (b !== CLOSE_ARRAY) return null;
        cuts.push(i);
        state = 4;
      }
      if (--depth < 0) return null;
    } else if (b === COMMA && state === 3 && depth === 2 && cuts.push(i) > MAX_PIECES) return null;
  }
  if (state !== 4) return null;
  const decoder = new TextDecoder();
  const open = cuts[0]!;
  const close = cuts.at(-1)!;
  const skeleton = decoder.decode(bytes.subarray(0, open + 1)) + decoder.decode(bytes.subarray(close));
  const messages: Uint8Array[] = [];
  for (let c = 0; c + 1 < cuts.length; c++) messages.push(bytes.subarray(cuts[c]! + 1, cuts[c + 1]!));
  // `[]` (spaces allowed) is no element, not an empty one.
  if (messages.length === 1 && messages[0]!.every(isSpace)) messages.length = 0;
  return { skeleton, messages };
}
