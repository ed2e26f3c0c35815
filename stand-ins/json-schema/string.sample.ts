/**
 * Sample strings for the JSON-schema sampler: plausible texts picked by property name, and
 * values for the string formats zod emits (email, uuid, date-time, ...) within the length bounds.
 */
import { pick } from '../seeded-random.ts';
import type { Schema } from './schema.resolve.ts';

const TEXTS: Record<string, readonly string[]> = {
  subject: ['Re: Quick follow-up', 'Re: Meeting next week', 'Re: Your request'],
  body: [
    'Hi,\n\nThanks for your message. I will look into it and get back to you by Friday.\n\nBest regards',
    'Hello,\n\nThank you for the update. The proposed time works for me.\n\nKind regards',
  ],
  text: ['Thanks for your message.'],
  content: ['Thanks for your message.'],
  message: ['Thanks for your message.'],
  language: ['en'],
  lang: ['en'],
  locale: ['en-US'],
  reason: [
    'The sender asks for a decision before a deadline.',
    'The message is an automated notification with no question.',
    'A colleague requests feedback on a document.',
  ],
  rationale: ['The sender asks for a decision before a deadline.'],
  explanation: ['The sender asks for a decision before a deadline.'],
  suggestedaction: ['Reply to confirm the meeting time.', 'Archive the message.', 'Review the attached document.'],
  action: ['Reply to confirm the meeting time.'],
  summary: ['The sender asks to reschedule the meeting.'],
  name: ['Alex Doe'],
  title: ['Sample title'],
  email: ['alex@example.com'],
  tone: ['friendly'],
  category: ['general'],
};

function humanize(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase();
}

export function textFor(name: string | undefined, _s: Schema, rng: () => number): string {
  const key = (name ?? '').replace(/[_\s-]/g, '').toLowerCase();
  const known = TEXTS[key];
  if (known) return pick(known, rng);
  return name ? `Sample ${humanize(name)}` : 'Sample text';
}

function hex(rng: () => number, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += Math.floor(rng() * 16).toString(16);
  return out;
}

function formatted(format: string, rng: () => number): string | undefined {
  switch (format) {
    case 'email':
    case 'idn-email':
      return 'alex@example.com';
    case 'date-time':
      return '2025-01-15T09:30:00.000Z';
    case 'date':
      return '2025-01-15';
    case 'time':
      return '09:30:00';
    case 'duration':
      return 'P1D';
    case 'uri':
    case 'url':
    case 'iri':
      return 'https://example.com/sample';
    case 'uri-reference':
    case 'iri-reference':
      return '/sample';
    case 'hostname':
    case 'idn-hostname':
      return 'example.com';
    case 'ipv4':
      return '192.0.2.1';
    case 'ipv6':
      return '2001:db8::1';
    case 'uuid':
      return `${hex(rng, 8)}-${hex(rng, 4)}-4${hex(rng, 3)}-${'89ab'[Math.floor(rng() * 4)]}${hex(rng, 3)}-${hex(rng, 12)}`;
    default:
      return undefined;
  }
}

export function genString(s: Schema, name: string | undefined, rng: () => number): string {
  let text = (typeof s.format === 'string' ? formatted(s.format, rng) : undefined) ?? textFor(name, s, rng);
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
  if (text.length < min) {
    const filler = ' lorem ipsum dolor sit amet';
    while (text.length < min) text += filler;
  }
  if (text.length > max) text = text.slice(0, max);
  if (text.length < min) text = text.padEnd(min, 'x');
  return text;
}
