// Small DOM helpers of the demo web client: elements, the notice line, busy buttons, dates.
import { createClient, isApiError } from '../../shared/client.ts';

declare const __API_BASE__: string;
export const API_BASE = __API_BASE__;
export const api = createClient({ baseUrl: API_BASE });
export type Api = typeof api;

export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text?: string,
  cls?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

/** The notice line under the header, with an optional link (e.g. "Reconnect"). */
export function notice(text: string, link?: { text: string; href: string }) {
  const box = $('notice');
  box.textContent = text;
  if (link) {
    const a = el('a', link.text);
    a.href = link.href;
    box.append(a);
  }
}

export function explain(err: unknown): string {
  if (isApiError(err, 'TOKEN_EXPIRED')) return 'The mail connection has expired.';
  return isApiError(err) ? `${err.code}: ${err.message}` : 'The service could not be reached.';
}

/** The notice that the mail connection must be renewed, with the link that does it. */
export function reconnectNotice() {
  notice('The mail connection has expired (after a restart of the demo, for example).', {
    text: 'Reconnect',
    href: `${API_BASE}/auth/provider`,
  });
}

/** Reports an error in the notice line; an expired connection offers to reconnect. */
export function report(err: unknown) {
  if (isApiError(err, 'TOKEN_EXPIRED')) reconnectNotice();
  else notice(explain(err));
}

/** Runs `fn` with `button` disabled, marked busy and relabelled, and restores it after. */
export async function busy<T>(button: HTMLButtonElement, label: string, fn: () => Promise<T>): Promise<T> {
  const text = button.textContent;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  button.textContent = label;
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    button.textContent = text;
  }
}

/** A `<time>`: the hour for today, the day for this year, else the full date; the full date and time as its title. */
export function when(iso: string): HTMLTimeElement {
  const d = new Date(iso);
  const now = new Date();
  const sameDay = d.toDateString() === now.toDateString();
  const text = sameDay
    ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString(
        undefined,
        d.getFullYear() === now.getFullYear()
          ? { day: 'numeric', month: 'short' }
          : { day: 'numeric', month: 'short', year: 'numeric' },
      );
  const node = el('time', text);
  node.dateTime = iso;
  node.title = d.toLocaleString();
  return node;
}

/** A `<label>` holding its text and a `<select>` of `values` (value, shown text). */
export function labelledSelect(
  text: string,
  name: string,
  values: [string, string][],
): { label: HTMLLabelElement; select: HTMLSelectElement } {
  const label = el('label', `${text} `);
  const select = el('select');
  select.name = name;
  for (const [value, shown] of values) select.append(new Option(shown, value));
  label.append(select);
  return { label, select };
}
