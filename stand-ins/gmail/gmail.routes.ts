/**
 * Handles one request to the Gmail stand-in: routing of the REST paths, the request log and
 * counters, the per-user quota, latency and injected faults, bearer auth, then the answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerToken, type GmailState } from './gmail.state.ts';
import type { FaultEndpoint } from './gmail.types.ts';
import { googleError, HttpError, jsonBytes, send, sendBytes } from './google-error.wire.ts';
import { checkFormat, listHistory, listMessages } from './list.endpoints.ts';
import type { Json, WatchRecord } from './mailbox.types.ts';
import { attachmentBytes, b64url, renderMessage } from './message.wire.ts';

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
  if (method === 'GET' && rest.length === 2 && a === 'labels') return { endpoint: 'labels.get', userId, id: b! };
  if (method === 'GET' && rest.length === 1 && a === 'messages') return { endpoint: 'messages.list', userId };
  if (method === 'GET' && rest.length === 2 && a === 'messages') return { endpoint: 'messages.get', userId, id: b! };
  if (method === 'GET' && rest.length === 4 && a === 'messages' && c === 'attachments')
    return { endpoint: 'attachments.get', userId, id: b!, attachmentId: d! };
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

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function handle(state: GmailState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const u = new URL(req.url ?? '/', 'http://stand-in');
  const method = req.method ?? 'GET';
  const r = route(method, u.pathname);
  const body = method === 'POST' ? await readBody(req) : '';
  const arrived = Date.now();
  state.requests.push({
    method,
    path: u.pathname,
    query: parseQuery(u.searchParams),
    endpoint: r.endpoint,
    at: arrived,
  });
  state.bump(r.endpoint);
  const format = (
    u.searchParams.get('format') ?? (r.endpoint === 'messages.get' || r.endpoint === 'threads.get' ? 'full' : '')
  ).toLowerCase();
  if (r.endpoint === 'messages.get' || r.endpoint === 'threads.get') state.bump(`${r.endpoint}:${format}`);

  // The per-user quota, charged on arrival to the mailbox the token belongs to (the service may
  // hold several tokens for one user, the provider counts them as one); an unknown token counts alone.
  const email = state.userOf(req);
  const quotaUser = email?.toLowerCase() ?? bearerToken(req) ?? req.headers.authorization ?? '';
  state.hold(quotaUser, r.endpoint, res);
  const verdict = state.quota.charge(quotaUser, state.quota.cost(r.endpoint), arrived, r.endpoint);
  if (state.latencyMs > 0) await sleep(state.latencyMs);
  if (!verdict.charged) {
    state.bump('quota-refused');
    return send(res, 429, googleError(429, 'User-rate limit exceeded.', 'rateLimitExceeded'), {
      'retry-after': String(verdict.retryAfterSeconds),
    });
  }
  const fault = r.endpoint === 'unknown' ? null : state.dueFault(r.endpoint, u.pathname);
  if (fault?.delayMs !== undefined) {
    // Takes effect now, answers later: the caller hears of it only after `delayMs`.
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.end = ((...args: unknown[]) => {
      setTimeout(() => end(...args), fault.delayMs);
      return res;
    }) as typeof res.end;
  }
  if (fault && fault.delayMs === undefined) {
    if (fault.hang) {
      state.hanging.add(res);
      res.on('close', () => state.hanging.delete(res));
      return;
    }
    if (fault.reset) {
      req.socket.destroy();
      return;
    }
    const headers: Record<string, string> =
      fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : {};
    if (fault.garbage) {
      const text = typeof fault.garbage === 'string' ? fault.garbage : '<html><body>502 upstream hiccup {"messages": [';
      if (!res.destroyed)
        res.writeHead(fault.status || 200, { 'content-type': 'application/json; charset=UTF-8', ...headers }).end(text);
      return;
    }
    return send(res, fault.status, googleError(fault.status, fault.message, fault.reason), headers);
  }

  try {
    if (r.endpoint === 'unknown') throw new HttpError(404, `Not Found: ${method} ${u.pathname}`, 'notFound');
    if (r.endpoint === 'discovery') {
      const v = u.searchParams.get('version');
      if (v !== null && v !== 'v1')
        throw new HttpError(404, `Discovery document for version ${v} not found.`, 'notFound');
      return send(res, 200, {
        kind: 'discovery#restDescription',
        discoveryVersion: 'v1',
        id: 'gmail:v1',
        name: 'gmail',
        version: 'v1',
        title: 'Gmail API',
        rootUrl: state.url,
        servicePath: '',
        batchPath: 'batch',
        resources: {},
      });
    }
    const owner = state.authorize(email);
    if (r.userId !== 'me' && r.userId?.toLowerCase() !== owner.toLowerCase())
      throw new HttpError(403, `Delegation denied for ${owner}`, 'forbidden');
    const mb = state.store.mailbox(owner);
    const sp = u.searchParams;
    switch (r.endpoint) {
      case 'profile':
        return send(res, 200, {
          emailAddress: mb.email,
          messagesTotal: mb.messages.size,
          threadsTotal: mb.threadCount(),
          historyId: String(mb.historyId),
        });
      case 'labels.get': {
        const counts = mb.labelCounts(r.id!);
        if (!counts) throw new HttpError(404, 'Requested entity was not found.', 'notFound');
        return send(res, 200, counts);
      }
      case 'messages.list':
        return send(res, 200, listMessages(mb, sp));
      case 'messages.get': {
        const m = mb.messages.get(r.id!);
        if (!m) throw new HttpError(404);
        return send(res, 200, renderMessage(m, checkFormat(format), sp.getAll('metadataHeaders')));
      }
      case 'attachments.get': {
        const m = mb.messages.get(r.id!);
        const a = m?.attachments.find((x) => x.attachmentId === r.attachmentId);
        if (!a) throw new HttpError(404);
        return send(res, 200, {
          size: a.size,
          data: m?.raw?.attachmentData[a.attachmentId] ?? b64url(attachmentBytes(a)),
        });
      }
      case 'threads.get': {
        const msgs = mb.threadMessages(r.id!);
        if (msgs.length === 0) throw new HttpError(404);
        const f = checkFormat(format);
        const key = `${mb.email} ${r.id} ${f} ${sp.getAll('metadataHeaders').join(',')}`;
        const kept = state.threadAnswers?.get(key);
        if (kept?.historyId === mb.historyId) return sendBytes(res, 200, kept.bytes);
        const bytes = jsonBytes({
          id: r.id!,
          snippet: renderMessage(msgs[msgs.length - 1]!, 'minimal').snippet,
          historyId: String(Math.max(...msgs.map((m) => m.historyId))),
          messages: msgs.map((m) => renderMessage(m, f, sp.getAll('metadataHeaders'))),
        });
        state.threadAnswers?.set(key, { historyId: mb.historyId, bytes });
        return sendBytes(res, 200, bytes);
      }
      case 'history.list':
        return send(res, 200, listHistory(mb, sp, state.deltaOnlyLabels));
      case 'watch': {
        let parsed: Json;
        try {
          parsed = body ? (JSON.parse(body) as Json) : {};
        } catch {
          throw new HttpError(400, 'Invalid JSON payload received.', 'parseError');
        }
        const topicName = typeof parsed.topicName === 'string' ? parsed.topicName : '';
        if (!topicName) throw new HttpError(400, 'Invalid topicName', 'invalidArgument');
        if (!/^projects\/[^/]+\/topics\/[^/]+$/.test(topicName))
          throw new HttpError(
            400,
            'Invalid topicName does not match projects/SOME-ANOTHER-PROJECT/topics/*',
            'invalidArgument',
          );
        const labelIds = Array.isArray(parsed.labelIds) ? parsed.labelIds.map(String) : [];
        const rawBehavior = String(parsed.labelFilterBehavior ?? parsed.labelFilterAction ?? 'include').toLowerCase();
        const behavior = rawBehavior === 'exclude' ? 'exclude' : 'include';
        const expiration = Date.now() + WEEK_MS;
        mb.activeWatch = { topicName, labelIds, labelFilterBehavior: behavior, expiration };
        const rec: WatchRecord = { kind: 'watch', topicName, labelIds, at: Date.now() };
        if (parsed.labelFilterBehavior !== undefined || parsed.labelFilterAction !== undefined)
          rec.labelFilterBehavior = behavior;
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
      const headers: Record<string, string> =
        e.code === 401
          ? { 'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' }
          : {};
      return send(res, e.code, googleError(e.code, e.message || undefined, e.reason, e.extra), headers);
    }
    throw e;
  }
}
