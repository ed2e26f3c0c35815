/**
 * Stand-in for the Gmail REST API v1, for integration tests, benchmarks and
 * `npm run demo`. Drive it with the real `@googleapis/gmail` client:
 *
 *   const standIn = await startGmailStandIn();
 *   const auth = new OAuth2Client(); auth.setCredentials({ access_token: 'tok' });
 *   const api = gmail({ version: 'v1', auth, rootUrl: standIn.url });
 *
 * Auth: `Authorization: Bearer <token>` is mapped to a mailbox email by
 *   1. `opts.authorize(token)` when given (null -> 401), else
 *   2. the token map filled by `standIn.setToken(token, email)`, else
 *   3. while no token was registered at all, any non-empty bearer token maps
 *      to the default mailbox `alice@example.com` (DEFAULT_MAILBOX).
 * Mailboxes are created on first use. `users/{userId}` accepts `me` or the
 * authorized address (anything else -> 403).
 *
 * Serves (under `/gmail/v1/users/{userId}/`): GET profile, GET messages,
 * GET messages/{id}, GET messages/{id}/attachments/{attachmentId},
 * GET threads/{id}, GET history, POST watch, POST stop; plus
 * GET /$discovery/rest?version=v1 at the root. Errors use Google's JSON
 * error shape. Wire snippets are HTML-escaped like Gmail's (`&#39;`), while
 * the control API's `snippet` is plain text.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  MailStore,
  attachmentBytes,
  b64url,
  compileQuery,
  renderMessage,
  seedMailbox,
  wireHistory,
  type HistoryEntry,
  type HistoryType,
  type Json,
  type Mailbox,
  type MessageFormat,
  type NewMessage,
  type SeedOptions,
  type StandInMessage,
  type WatchRecord,
} from './gmail-mailbox.ts';

export type {
  Address,
  AttachmentSpec,
  NewMessage,
  SeedOptions,
  StandInAttachment,
  StandInMessage,
  WatchRecord,
} from './gmail-mailbox.ts';

export const DEFAULT_MAILBOX = 'alice@example.com';

export type FaultEndpoint =
  | 'profile'
  | 'messages.list'
  | 'messages.get'
  | 'attachments.get'
  | 'threads.get'
  | 'history.list'
  | 'watch'
  | 'stop'
  | 'discovery'
  | '*';

export interface FaultSpec {
  endpoint: FaultEndpoint;
  /** HTTP status of the error answer. Ignored for `hang`/`reset`; for `garbage` defaults to 200 when 0. */
  status: number;
  /** errors[0].reason; defaults per status (429 -> rateLimitExceeded, 404 -> notFound, 500 -> backendError, ...). */
  reason?: string;
  message?: string;
  /** How many matching calls fail (default 1; Infinity for "until clearFaults()"). */
  times?: number;
  /** Let this many matching calls pass before failing. */
  afterCalls?: number;
  /** Never answer (until close()); for client timeout tests. */
  hang?: boolean;
  /** Answer `status || 200` with a non-JSON body (this string, or a default) labelled application/json. */
  garbage?: boolean | string;
  /** Destroy the socket without answering (client sees ECONNRESET / "socket hang up"). */
  reset?: boolean;
  /** Adds a `Retry-After` header. */
  retryAfterSeconds?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  /** Endpoint key, e.g. 'messages.get', or 'unknown'. */
  endpoint: string;
  at: number;
}

export interface InboxMessage extends StandInMessage {
  unread: boolean;
}

/** Pub/Sub-style push notification payload (what Gmail publishes to the watch topic). */
export interface GmailNotification {
  emailAddress: string;
  historyId: number;
  topicName: string;
}

export interface GmailStandIn {
  /** Root URL with trailing slash, e.g. `http://127.0.0.1:54321/`; pass as `rootUrl`. */
  readonly url: string;
  setToken(token: string, email: string): void;

  addMessage(email: string, partial?: NewMessage): StandInMessage;
  /** A `SENT`-only message from the mailbox owner to the last sender in `threadId`. */
  addSentReply(email: string, threadId: string, partial?: NewMessage): StandInMessage;
  deleteMessage(email: string, id: string): void;
  setRead(email: string, id: string, read: boolean): void;
  archive(email: string, id: string): void;
  moveToInbox(email: string, id: string): void;
  /** Generic label change (e.g. STARRED, TRASH, SPAM); one history record per kind of change. */
  modifyLabels(email: string, id: string, change: { add?: string[]; remove?: string[] }): void;
  /** Adds `count` received messages (+ SENT replies unless `sentReplies: false`). Returns all created messages, oldest first. */
  seed(email: string, count: number, opts?: SeedOptions): StandInMessage[];

  /** Messages carrying INBOX, newest first (same order as messages.list?labelIds=INBOX). Copies. */
  inbox(email: string): InboxMessage[];
  /** All messages of the mailbox (any label), newest first. Copies. */
  messages(email: string): StandInMessage[];
  getMessage(email: string, id: string): StandInMessage | undefined;
  /** The mailbox's current historyId. */
  historyId(email: string): number;
  /** history.list with startHistoryId below the current historyId answers 404 from now on (until a later expireHistory moves the floor again). */
  expireHistory(email: string): void;

  injectFault(fault: FaultSpec): void;
  clearFaults(): void;
  setLatency(ms: number): void;

  /** Per-endpoint call counters (faulted and 401 calls count too). Known keys start at 0. */
  readonly calls: Record<string, number>;
  readonly requests: RecordedRequest[];
  resetCounters(): void;

  watches(email: string): WatchRecord[];
  /** Called after every history change of a mailbox with an active, unexpired watch whose label filter matches. Returns unsubscribe. */
  onNotification(listener: (n: GmailNotification) => void): () => void;

  close(): Promise<void>;
}

export interface GmailStandInOptions {
  authorize?: (accessToken: string) => string | null;
  latencyMs?: number;
  /** Seed for generated ids' low bits, history id gaps and `seed()` content (default 1). */
  seed?: number;
}

// ---------------------------------------------------------------- errors

class HttpError extends Error {
  constructor(
    readonly code: number,
    message?: string,
    readonly reason?: string,
    readonly extra: Json = {},
  ) {
    super(message);
  }
}

const STATUS: Record<number, [status: string, reason: string, message: string]> = {
  400: ['INVALID_ARGUMENT', 'badRequest', 'Bad Request'],
  401: [
    'UNAUTHENTICATED',
    'authError',
    'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
  ],
  403: ['PERMISSION_DENIED', 'forbidden', 'The caller does not have permission'],
  404: ['NOT_FOUND', 'notFound', 'Requested entity was not found.'],
  409: ['ABORTED', 'conflict', 'The operation was aborted.'],
  429: ['RESOURCE_EXHAUSTED', 'rateLimitExceeded', 'Too many concurrent requests for user.'],
  500: ['INTERNAL', 'backendError', 'Internal error encountered.'],
  502: ['UNAVAILABLE', 'backendError', 'Bad Gateway'],
  503: ['UNAVAILABLE', 'backendError', 'The service is currently unavailable.'],
  504: ['DEADLINE_EXCEEDED', 'backendError', 'The request timed out.'],
};
const RATE_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'dailyLimitExceeded', 'quotaExceeded']);
const RATE_MESSAGES: Record<string, string> = {
  userRateLimitExceeded: 'User-rate limit exceeded.',
  rateLimitExceeded: 'Too many concurrent requests for user.',
  dailyLimitExceeded: 'Daily Limit Exceeded.',
};

/** Google's JSON error body: `{error:{code, message, errors:[{message, domain, reason}], status}}`. */
export function googleError(code: number, message?: string, reason?: string, extra: Json = {}): Json {
  const [status, defReason, defMessage] = STATUS[code] ?? (code >= 500 ? ['INTERNAL', 'backendError', 'Backend Error'] : ['FAILED_PRECONDITION', 'failedPrecondition', 'Request failed']);
  const r = reason ?? defReason;
  const msg = message ?? RATE_MESSAGES[r] ?? defMessage;
  const domain = RATE_REASONS.has(r) ? 'usageLimits' : 'global';
  return { error: { code, message: msg, errors: [{ message: code === 401 ? 'Invalid Credentials' : msg, domain, reason: r, ...extra }], status } };
}

// ---------------------------------------------------------------- server

const KNOWN_COUNTERS = [
  'profile', 'messages.list', 'messages.get', 'messages.get:minimal', 'messages.get:metadata', 'messages.get:full',
  'attachments.get', 'threads.get', 'threads.get:minimal', 'threads.get:metadata', 'threads.get:full',
  'history.list', 'watch', 'stop', 'discovery', 'unknown',
];
const HISTORY_TYPES = new Set<HistoryType>(['messageAdded', 'messageDeleted', 'labelAdded', 'labelRemoved']);
const WEEK_MS = 7 * 86_400_000;

interface Route {
  endpoint: Exclude<FaultEndpoint, '*'> | 'unknown';
  userId?: string;
  id?: string;
  attachmentId?: string;
}

function route(method: string, path: string): Route {
  if (method === 'GET' && path === '/$discovery/rest') return { endpoint: 'discovery' };
  const m = /^\/gmail\/v1\/users\/([^/]+)\/(.+)$/.exec(path);
  if (!m) return { endpoint: 'unknown' };
  const userId = decodeURIComponent(m[1]!);
  const rest = m[2]!.split('/').map(decodeURIComponent);
  const [a, b, c, d] = rest;
  if (method === 'GET' && rest.length === 1 && a === 'profile') return { endpoint: 'profile', userId };
  if (method === 'GET' && rest.length === 1 && a === 'messages') return { endpoint: 'messages.list', userId };
  if (method === 'GET' && rest.length === 2 && a === 'messages') return { endpoint: 'messages.get', userId, id: b! };
  if (method === 'GET' && rest.length === 4 && a === 'messages' && c === 'attachments') return { endpoint: 'attachments.get', userId, id: b!, attachmentId: d! };
  if (method === 'GET' && rest.length === 2 && a === 'threads') return { endpoint: 'threads.get', userId, id: b! };
  if (method === 'GET' && rest.length === 1 && a === 'history') return { endpoint: 'history.list', userId };
  if (method === 'POST' && rest.length === 1 && a === 'watch') return { endpoint: 'watch', userId };
  if (method === 'POST' && rest.length === 1 && a === 'stop') return { endpoint: 'stop', userId };
  return { endpoint: 'unknown' };
}

function parseQuery(sp: URLSearchParams): Record<string, string | string[]> {
  const q: Record<string, string | string[]> = {};
  for (const [k, v] of sp) {
    const prev = q[k];
    q[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return q;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function intParam(sp: URLSearchParams, name: string, def: number, max: number): number {
  const raw = sp.get(name);
  if (raw === null || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new HttpError(400, `Invalid value for ${name}: ${raw}`, 'invalidArgument');
  const n = Number(raw);
  return n === 0 ? def : Math.min(n, max);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startGmailStandIn(opts: GmailStandInOptions = {}): Promise<GmailStandIn> {
  const listeners = new Set<(n: GmailNotification) => void>();
  const store = new MailStore(opts.seed ?? 1, (mb, entry) => notify(mb, entry));
  const tokens = new Map<string, string>();
  let latencyMs = opts.latencyMs ?? 0;
  const faults: { spec: FaultSpec; seen: number; fired: number }[] = [];
  const calls: Record<string, number> = {};
  const requests: RecordedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  let url = '';

  const resetCounters = () => {
    for (const k of Object.keys(calls)) delete calls[k];
    for (const k of KNOWN_COUNTERS) calls[k] = 0;
    requests.length = 0;
  };
  resetCounters();
  const bump = (key: string) => (calls[key] = (calls[key] ?? 0) + 1);

  function notify(mb: Mailbox, entry: HistoryEntry): void {
    const w = mb.activeWatch;
    if (!w || w.expiration <= Date.now() || listeners.size === 0) return;
    if (w.labelIds.length) {
      const touched = [...entry.message.labelIds, ...(entry.labelIds ?? [])];
      const hit = w.labelIds.some((l) => touched.includes(l));
      if (hit !== (w.labelFilterBehavior === 'include')) return;
    }
    const n: GmailNotification = { emailAddress: mb.email, historyId: entry.id, topicName: w.topicName };
    for (const l of listeners) {
      setImmediate(() => {
        try {
          l(n);
        } catch {
          /* listener errors are the listener's business */
        }
      });
    }
  }

  function authorize(req: IncomingMessage): string {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    const token = m?.[1];
    let email: string | null = null;
    if (token) {
      if (opts.authorize) email = opts.authorize(token);
      else if (tokens.size > 0) email = tokens.get(token) ?? null;
      else email = DEFAULT_MAILBOX;
    }
    if (!email) throw new HttpError(401, undefined, 'authError', { location: 'Authorization', locationType: 'header' });
    return email;
  }

  function send(res: ServerResponse, status: number, body: Json | null, headers: Record<string, string> = {}): void {
    if (res.destroyed || res.writableEnded) return;
    if (body === null) {
      res.writeHead(status, headers).end();
      return;
    }
    const text = JSON.stringify(body, null, 2);
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text), ...headers }).end(text);
  }

  function dueFault(endpoint: string): FaultSpec | null {
    let chosen: FaultSpec | null = null;
    for (const f of faults) {
      if (f.spec.endpoint !== '*' && f.spec.endpoint !== endpoint) continue;
      f.seen++;
      if (!chosen && f.seen > (f.spec.afterCalls ?? 0) && f.fired < (f.spec.times ?? 1)) {
        f.fired++;
        chosen = f.spec;
      }
    }
    for (let i = faults.length - 1; i >= 0; i--) if (faults[i]!.fired >= (faults[i]!.spec.times ?? 1)) faults.splice(i, 1);
    return chosen;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://stand-in');
    const method = req.method ?? 'GET';
    const r = route(method, u.pathname);
    const body = method === 'POST' ? await readBody(req) : '';
    requests.push({ method, path: u.pathname, query: parseQuery(u.searchParams), endpoint: r.endpoint, at: Date.now() });
    bump(r.endpoint);
    const format = (u.searchParams.get('format') ?? (r.endpoint === 'messages.get' || r.endpoint === 'threads.get' ? 'full' : '')).toLowerCase();
    if (r.endpoint === 'messages.get' || r.endpoint === 'threads.get') bump(`${r.endpoint}:${format}`);

    if (latencyMs > 0) await sleep(latencyMs);
    const fault = r.endpoint === 'unknown' ? null : dueFault(r.endpoint);
    if (fault) {
      if (fault.hang) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (fault.reset) {
        req.socket.destroy();
        return;
      }
      const headers: Record<string, string> = fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : {};
      if (fault.garbage) {
        const text = typeof fault.garbage === 'string' ? fault.garbage : '<html><body>502 upstream hiccup {"messages": [';
        if (!res.destroyed) res.writeHead(fault.status || 200, { 'content-type': 'application/json; charset=UTF-8', ...headers }).end(text);
        return;
      }
      return send(res, fault.status, googleError(fault.status, fault.message, fault.reason), headers);
    }

    try {
      if (r.endpoint === 'unknown') throw new HttpError(404, `Not Found: ${method} ${u.pathname}`, 'notFound');
      if (r.endpoint === 'discovery') {
        const v = u.searchParams.get('version');
        if (v !== null && v !== 'v1') throw new HttpError(404, `Discovery document for version ${v} not found.`, 'notFound');
        return send(res, 200, { kind: 'discovery#restDescription', discoveryVersion: 'v1', id: 'gmail:v1', name: 'gmail', version: 'v1', title: 'Gmail API', rootUrl: url, servicePath: '', batchPath: 'batch', resources: {} });
      }
      const email = authorize(req);
      if (r.userId !== 'me' && r.userId?.toLowerCase() !== email.toLowerCase()) throw new HttpError(403, `Delegation denied for ${email}`, 'forbidden');
      const mb = store.mailbox(email);
      const sp = u.searchParams;
      switch (r.endpoint) {
        case 'profile':
          return send(res, 200, { emailAddress: mb.email, messagesTotal: mb.messages.size, threadsTotal: mb.threadCount(), historyId: String(mb.historyId) });
        case 'messages.list':
          return send(res, 200, listMessages(mb, sp));
        case 'messages.get': {
          const m = mb.messages.get(r.id!);
          if (!m) throw new HttpError(404);
          return send(res, 200, renderMessage(m, checkFormat(format), sp.getAll('metadataHeaders')));
        }
        case 'attachments.get': {
          const a = mb.messages.get(r.id!)?.attachments.find((x) => x.attachmentId === r.attachmentId);
          if (!a) throw new HttpError(404);
          return send(res, 200, { size: a.size, data: b64url(attachmentBytes(a)) });
        }
        case 'threads.get': {
          const msgs = mb.threadMessages(r.id!);
          if (msgs.length === 0) throw new HttpError(404);
          const f = checkFormat(format);
          return send(res, 200, {
            id: r.id!,
            snippet: renderMessage(msgs[msgs.length - 1]!, 'minimal').snippet,
            historyId: String(Math.max(...msgs.map((m) => m.historyId))),
            messages: msgs.map((m) => renderMessage(m, f, sp.getAll('metadataHeaders'))),
          });
        }
        case 'history.list':
          return send(res, 200, listHistory(mb, sp));
        case 'watch': {
          let parsed: Json;
          try {
            parsed = body ? (JSON.parse(body) as Json) : {};
          } catch {
            throw new HttpError(400, 'Invalid JSON payload received.', 'parseError');
          }
          const topicName = typeof parsed.topicName === 'string' ? parsed.topicName : '';
          if (!topicName) throw new HttpError(400, 'Invalid topicName', 'invalidArgument');
          if (!/^projects\/[^/]+\/topics\/[^/]+$/.test(topicName)) throw new HttpError(400, 'Invalid topicName does not match projects/SOME-ANOTHER-PROJECT/topics/*', 'invalidArgument');
          const labelIds = Array.isArray(parsed.labelIds) ? parsed.labelIds.map(String) : [];
          const rawBehavior = String(parsed.labelFilterBehavior ?? parsed.labelFilterAction ?? 'include').toLowerCase();
          const behavior = rawBehavior === 'exclude' ? 'exclude' : 'include';
          const expiration = Date.now() + WEEK_MS;
          mb.activeWatch = { topicName, labelIds, labelFilterBehavior: behavior, expiration };
          const rec: WatchRecord = { kind: 'watch', topicName, labelIds, at: Date.now() };
          if (parsed.labelFilterBehavior !== undefined || parsed.labelFilterAction !== undefined) rec.labelFilterBehavior = behavior;
          mb.watchLog.push(rec);
          return send(res, 200, { historyId: String(mb.historyId), expiration: String(expiration) });
        }
        case 'stop':
          mb.activeWatch = null;
          mb.watchLog.push({ kind: 'stop', at: Date.now() });
          return send(res, 204, null);
      }
    } catch (e) {
      if (e instanceof HttpError) {
        const headers: Record<string, string> = e.code === 401 ? { 'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' } : {};
        return send(res, e.code, googleError(e.code, e.message || undefined, e.reason, e.extra), headers);
      }
      throw e;
    }
  }

  function checkFormat(f: string): MessageFormat {
    if (f === 'minimal' || f === 'metadata' || f === 'full') return f;
    throw new HttpError(400, `Invalid value at 'format' (${f}); the stand-in supports minimal, metadata and full`, 'invalidArgument');
  }

  function listMessages(mb: Mailbox, sp: URLSearchParams): Json {
    const labelIds = sp.getAll('labelIds');
    const max = intParam(sp, 'maxResults', 100, 500);
    const { match, anywhere } = compileQuery(sp.get('q') ?? '');
    const spamTrash = anywhere || sp.get('includeSpamTrash') === 'true' || labelIds.some((l) => l === 'SPAM' || l === 'TRASH');
    const all = mb
      .sorted()
      .filter((m) => labelIds.every((l) => m.labelIds.includes(l)))
      .filter((m) => spamTrash || !m.labelIds.some((l) => l === 'SPAM' || l === 'TRASH'))
      .filter(match);
    let start = 0;
    const token = sp.get('pageToken');
    if (token) {
      const mm = /^(\d+):([0-9a-zA-Z_-]+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
      if (!mm) throw new HttpError(400, 'Invalid pageToken', 'invalidArgument');
      const [date, id] = [Number(mm[1]), mm[2]!];
      // first message strictly after (date, id) in newest-first order; stable while the mailbox changes
      start = all.findIndex((m) => m.internalDate < date || (m.internalDate === date && m.id < id));
      if (start < 0) start = all.length;
    }
    const page = all.slice(start, start + max);
    const out: Json = {};
    if (page.length) out.messages = page.map((m) => ({ id: m.id, threadId: m.threadId }));
    const last = page[page.length - 1];
    if (last && start + max < all.length) out.nextPageToken = b64url(`${last.internalDate}:${last.id}`);
    out.resultSizeEstimate = all.length;
    return out;
  }

  function listHistory(mb: Mailbox, sp: URLSearchParams): Json {
    const raw = sp.get('startHistoryId');
    if (raw === null || raw === '') throw new HttpError(400, 'Missing required parameter: startHistoryId', 'invalidArgument');
    if (!/^\d+$/.test(raw)) throw new HttpError(400, `Invalid value for startHistoryId: ${raw}`, 'invalidArgument');
    const startId = Number(raw);
    if (startId < mb.historyFloor) throw new HttpError(404);
    const types = sp.getAll('historyTypes');
    for (const t of types) if (!HISTORY_TYPES.has(t as HistoryType)) throw new HttpError(400, `Invalid value for historyTypes: ${t}`, 'invalidArgument');
    const labelId = sp.get('labelId');
    const max = intParam(sp, 'maxResults', 100, 500);
    let after = startId;
    const token = sp.get('pageToken');
    if (token) {
      if (!/^\d+$/.test(token)) throw new HttpError(400, 'Invalid pageToken', 'invalidArgument');
      after = Math.max(after, Number(token));
    }
    const matching = mb.history.filter(
      (e) =>
        e.id > after &&
        (types.length === 0 || types.includes(e.type)) &&
        (!labelId || e.message.labelIds.includes(labelId) || (e.labelIds ?? []).includes(labelId)),
    );
    const page = matching.slice(0, max);
    const out: Json = {};
    if (page.length) out.history = page.map(wireHistory);
    if (matching.length > max) out.nextPageToken = String(page[page.length - 1]!.id);
    out.historyId = String(mb.historyId);
    return out;
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      send(res, 500, googleError(500, `stand-in bug: ${err instanceof Error ? err.message : String(err)}`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  const mailbox = (email: string) => store.mailbox(email);
  const copy = (m: StandInMessage): StandInMessage => structuredClone(m);

  return {
    url,
    setToken: (token, email) => void tokens.set(token, email.toLowerCase()),
    addMessage: (email, partial) => copy(mailbox(email).add(partial)),
    addSentReply(email, threadId, partial = {}) {
      const mb = mailbox(email);
      const thread = mb.threadMessages(threadId);
      const other = [...thread].reverse().find((m) => m.from.address.toLowerCase() !== mb.email);
      return copy(
        mb.add({
          from: { name: mb.ownerName, address: mb.email },
          to: other ? other.from : (thread[0]?.to ?? []),
          bodyText: 'Thanks, sounds good.\n\nCheers',
          ...partial,
          threadId,
          labelIds: partial.labelIds ?? ['SENT'],
        }),
      );
    },
    deleteMessage: (email, id) => mailbox(email).delete(id),
    setRead: (email, id, read) => void (read ? mailbox(email).modify(id, [], ['UNREAD']) : mailbox(email).modify(id, ['UNREAD'])),
    archive: (email, id) => void mailbox(email).modify(id, [], ['INBOX']),
    moveToInbox: (email, id) => void mailbox(email).modify(id, ['INBOX']),
    modifyLabels: (email, id, change) => void mailbox(email).modify(id, change.add, change.remove),
    seed: (email, count, seedOpts) => seedMailbox(mailbox(email), store, count, seedOpts).map(copy),
    inbox: (email) =>
      mailbox(email)
        .sorted()
        .filter((m) => m.labelIds.includes('INBOX'))
        .map((m) => ({ ...copy(m), unread: m.labelIds.includes('UNREAD') })),
    messages: (email) => mailbox(email).sorted().map(copy),
    getMessage: (email, id) => {
      const m = mailbox(email).messages.get(id);
      return m && copy(m);
    },
    historyId: (email) => mailbox(email).historyId,
    expireHistory: (email) => {
      const mb = mailbox(email);
      mb.historyFloor = mb.historyId;
    },
    injectFault(fault) {
      if (!fault.hang && !fault.reset && !fault.garbage && !(fault.status >= 100 && fault.status <= 599)) {
        throw new Error(`gmail stand-in: fault status ${fault.status} needs hang, reset or garbage`);
      }
      faults.push({ spec: { ...fault }, seen: 0, fired: 0 });
    },
    clearFaults: () => void (faults.length = 0),
    setLatency: (ms) => void (latencyMs = ms),
    calls,
    requests,
    resetCounters,
    watches: (email) => mailbox(email).watchLog.map((w) => ({ ...w })),
    onNotification(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async close() {
      faults.length = 0;
      for (const res of hanging) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
