/**
 * The Gmail stand-in's state between requests: the mailboxes, bearer tokens, latency, injected
 * faults, counters and request log, hanging answers, and the watch notifications it publishes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './google-error.wire.ts';
import {
  DEFAULT_MAILBOX,
  type FaultSpec,
  type GmailNotification,
  type GmailStandInOptions,
  type RecordedRequest,
} from './gmail.types.ts';
import { MailStore, type Mailbox } from './mailbox.model.ts';
import type { HistoryEntry } from './mailbox.types.ts';
import { QuotaLedger } from './quota.model.ts';

const KNOWN_COUNTERS = [
  'profile',
  'labels.get',
  'messages.list',
  'messages.get',
  'messages.get:minimal',
  'messages.get:metadata',
  'messages.get:full',
  'attachments.get',
  'threads.get',
  'threads.get:minimal',
  'threads.get:metadata',
  'threads.get:full',
  'history.list',
  'watch',
  'stop',
  'discovery',
  'unknown',
];

/** The bearer token of a request, or null without one. */
export function bearerToken(req: IncomingMessage): string | null {
  return /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1] ?? null;
}

export class GmailState {
  readonly listeners = new Set<(n: GmailNotification) => void>();
  readonly store: MailStore;
  readonly tokens = new Map<string, string>();
  latencyMs: number;
  readonly faults: { spec: FaultSpec; seen: number; fired: number }[] = [];
  readonly calls: Record<string, number> = {};
  readonly requests: RecordedRequest[] = [];
  readonly hanging = new Set<ServerResponse>();
  /** Set once the server listens; the discovery document's rootUrl. */
  url = '';
  /** The provider's per-user quota: costs, the moving window per mailbox, and what tests observe. */
  readonly quota = new QuotaLedger();
  /** History label records carry only the change (no `labelIds` snapshot of the message), as Gmail's may. */
  deltaOnlyLabels = false;
  /** threads.get answers kept (keepThreadAnswers), by mailbox, thread, format and metadata headers, with the mailbox's history id they were made at; null: none kept. */
  threadAnswers: Map<string, { historyId: number; bytes: Buffer }> | null = null;
  /** Requests held now and at most since resetCounters, by user and by user and endpoint (`hold`). */
  private readonly held = new Map<string, { now: number; peak: number }>();

  private readonly opts: GmailStandInOptions;

  constructor(opts: GmailStandInOptions) {
    this.opts = opts;
    this.store = new MailStore(opts.seed ?? 1, (mb, entry) => this.notify(mb, entry));
    this.latencyMs = opts.latencyMs ?? 0;
    this.resetCounters();
  }

  resetCounters(): void {
    for (const k of Object.keys(this.calls)) delete this.calls[k];
    for (const k of KNOWN_COUNTERS) this.calls[k] = 0;
    this.requests.length = 0;
    this.quota.resetObservations();
    for (const [key, h] of this.held)
      if (h.now === 0) this.held.delete(key);
      else h.peak = h.now;
  }

  /** Counts a request of `user` as held from now until its answer has been handed to the connection (or the connection closed). */
  hold(user: string, endpoint: string, res: ServerResponse): void {
    const keys = [user, `${user} ${endpoint}`];
    for (const key of keys) {
      let h = this.held.get(key);
      if (!h) this.held.set(key, (h = { now: 0, peak: 0 }));
      h.now++;
      h.peak = Math.max(h.peak, h.now);
    }
    res.once('close', () => {
      for (const key of keys) this.held.get(key)!.now--;
    });
  }

  /** The most requests of `user` (of one endpoint, when given) held at once since resetCounters. */
  heldPeak(user: string, endpoint?: string): number {
    return this.held.get(endpoint ? `${user} ${endpoint}` : user)?.peak ?? 0;
  }

  bump(key: string): number {
    return (this.calls[key] = (this.calls[key] ?? 0) + 1);
  }

  notify(mb: Mailbox, entry: HistoryEntry): void {
    const w = mb.activeWatch;
    if (!w || w.expiration <= Date.now() || this.listeners.size === 0) return;
    if (w.labelIds.length) {
      const touched = [...entry.message.labelIds, ...(entry.labelIds ?? [])];
      const hit = w.labelIds.some((l) => touched.includes(l));
      if (hit !== (w.labelFilterBehavior === 'include')) return;
    }
    const n: GmailNotification = { emailAddress: mb.email, historyId: entry.id, topicName: w.topicName };
    for (const l of this.listeners) {
      setImmediate(() => {
        try {
          l(n);
        } catch {
          /* listener errors are the listener's business */
        }
      });
    }
  }

  /** The mailbox a request's token belongs to; null when none does. */
  userOf(req: IncomingMessage): string | null {
    const token = bearerToken(req);
    let email: string | null = null;
    if (token) {
      if (this.opts.authorize) email = this.opts.authorize(token);
      else if (this.tokens.size > 0) email = this.tokens.get(token) ?? null;
      else email = DEFAULT_MAILBOX;
    }
    return email;
  }

  /** The mailbox `userOf` found for the request, or the 401 Google answers an unknown token with. */
  authorize(email: string | null): string {
    if (!email) throw new HttpError(401, undefined, 'authError', { location: 'Authorization', locationType: 'header' });
    return email;
  }

  dueFault(endpoint: string, path = ''): FaultSpec | null {
    let chosen: FaultSpec | null = null;
    for (const f of this.faults) {
      if (f.spec.endpoint !== '*' && f.spec.endpoint !== endpoint) continue;
      if (f.spec.pathIncludes !== undefined && !path.includes(f.spec.pathIncludes)) continue;
      f.seen++;
      if (!chosen && f.seen > (f.spec.afterCalls ?? 0) && f.fired < (f.spec.times ?? 1)) {
        f.fired++;
        chosen = f.spec;
      }
    }
    for (let i = this.faults.length - 1; i >= 0; i--)
      if (this.faults[i]!.fired >= (this.faults[i]!.spec.times ?? 1)) this.faults.splice(i, 1);
    return chosen;
  }
}
