/**
 * The identity stand-in's HTTP plumbing: bounded body reading, JSON and HTML error answers in
 * Google's OAuth shapes, client Basic credentials, and answering with an injected fault.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PendingFault } from './grant.store.ts';

const MAX_BODY_BYTES = 64 * 1024;

export class HttpError extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    super(String(body['error'] ?? status));
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const missing = (name: string) =>
  new HttpError(400, { error: 'invalid_request', error_description: `Missing required parameter: ${name}` });

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, { error: 'invalid_request', error_description: 'Request body too large.' }));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export const isForm = (req: IncomingMessage) =>
  (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    pragma: 'no-cache',
    ...headers,
  });
  res.end(text);
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function sendErrorPage(res: ServerResponse, error: string, description: string) {
  const html =
    `<!doctype html><html><head><meta charset="utf-8"><title>Error 400: ${escapeHtml(error)}</title></head>` +
    `<body><h1>Access blocked: this request is invalid</h1><p>Error 400: <b>${escapeHtml(error)}</b></p>` +
    `<p>${escapeHtml(description)}</p><p>(identity stand-in)</p></body></html>`;
  res.writeHead(400, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
  res.end(html);
}

export function basicCredentials(req: IncomingMessage): { id: string; secret: string } | null {
  const m = /^basic\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return null;
  // RFC 6749 §2.3.1: both parts are form-urlencoded before base64; tolerate clients that skip it.
  const unescape = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  return { id: unescape(decoded.slice(0, i)), secret: unescape(decoded.slice(i + 1)) };
}

/** Answers with the fault. Returns without answering for hang (the socket is destroyed on close()). */
export function applyFault(res: ServerResponse, fault: PendingFault) {
  if (fault.hang) return;
  if (fault.status === 0) {
    res.socket?.destroy();
    return;
  }
  const body =
    fault.body ??
    JSON.stringify({
      error: fault.status >= 500 ? 'server_error' : 'invalid_request',
      error_description: `Injected fault (status ${fault.status}).`,
    });
  res.writeHead(fault.status, {
    'content-type': fault.contentType ?? 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...fault.headers,
  });
  res.end(body);
}
