/**
 * An answer that already knows its JSON text, in parts (UTF-8 buffers, the big ones held in a
 * cache), so that a transport can send those parts instead of serialising the object: for a
 * thread of megabytes, JSON.stringify and the UTF-8 encoding of its result were most of the
 * event loop's work per open, and a fresh multi-megabyte string of garbage each time.
 *
 * The object stays an ordinary answer for everyone else (in-process callers, tests, the /trpc
 * endpoint): its fields are the plain values, and JSON.stringify writes `toJson()` (which can
 * use JSON.rawJSON for the big strings). A transport that sends the parts takes them first
 * (`takeAnswerParts`); from then on JSON.stringify writes `null` for it, cheaply, since the
 * transport sends the parts in its place.
 */

const PARTS = Symbol('mia.answerParts');

interface PartsState {
  parts: () => Buffer[];
  taken: boolean;
}

/** Gives `answer` its JSON text in parts, and `toJson()` as what JSON.stringify writes for it. */
export function withAnswerParts<T extends object>(answer: T, toJson: () => unknown, parts: () => Buffer[]): T {
  const state: PartsState = { parts, taken: false };
  Object.defineProperty(answer, PARTS, { value: state });
  Object.defineProperty(answer, 'toJSON', { value: () => (state.taken ? null : toJson()) });
  return answer;
}

/**
 * The JSON text of `answer` in parts (concatenated, the UTF-8 of what JSON.stringify would have
 * written), or undefined when it has none. Once taken, JSON.stringify(answer) is `null`.
 */
export function takeAnswerParts(answer: unknown): Buffer[] | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const state = (answer as { [PARTS]?: PartsState })[PARTS];
  if (!state || state.taken) return undefined;
  state.taken = true;
  return state.parts();
}
