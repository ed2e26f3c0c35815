/**
 * The Gmail stand-in's list endpoints (messages.list with labels, q and page tokens; history.list
 * with history types, label and page tokens) and the parameter checks they share with the others.
 */
import { HttpError } from './google-error.wire.ts';
import type { Mailbox } from './mailbox.model.ts';
import type { HistoryType, Json } from './mailbox.types.ts';
import { b64url, wireHistory, type MessageFormat } from './message.wire.ts';
import { compileQuery } from './search.query.ts';

const HISTORY_TYPES = new Set<HistoryType>(['messageAdded', 'messageDeleted', 'labelAdded', 'labelRemoved']);

function intParam(sp: URLSearchParams, name: string, def: number, max: number): number {
  const raw = sp.get(name);
  if (raw === null || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new HttpError(400, `Invalid value for ${name}: ${raw}`, 'invalidArgument');
  const n = Number(raw);
  return n === 0 ? def : Math.min(n, max);
}

export function checkFormat(f: string): MessageFormat {
  if (f === 'minimal' || f === 'metadata' || f === 'full') return f;
  throw new HttpError(
    400,
    `Invalid value at 'format' (${f}); the stand-in supports minimal, metadata and full`,
    'invalidArgument',
  );
}

export function listMessages(mb: Mailbox, sp: URLSearchParams): Json {
  const labelIds = sp.getAll('labelIds');
  const max = intParam(sp, 'maxResults', 100, 500);
  const { match, anywhere } = compileQuery(sp.get('q') ?? '');
  const spamTrash =
    anywhere || sp.get('includeSpamTrash') === 'true' || labelIds.some((l) => l === 'SPAM' || l === 'TRASH');
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

export function listHistory(mb: Mailbox, sp: URLSearchParams, deltaOnly = false): Json {
  const raw = sp.get('startHistoryId');
  if (raw === null || raw === '')
    throw new HttpError(400, 'Missing required parameter: startHistoryId', 'invalidArgument');
  if (!/^\d+$/.test(raw)) throw new HttpError(400, `Invalid value for startHistoryId: ${raw}`, 'invalidArgument');
  const startId = Number(raw);
  if (startId < mb.historyFloor) throw new HttpError(404);
  const types = sp.getAll('historyTypes');
  for (const t of types)
    if (!HISTORY_TYPES.has(t as HistoryType))
      throw new HttpError(400, `Invalid value for historyTypes: ${t}`, 'invalidArgument');
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
  if (page.length) out.history = page.map((e) => wireHistory(e, deltaOnly));
  if (matching.length > max) out.nextPageToken = String(page[page.length - 1]!.id);
  out.historyId = String(mb.historyId);
  return out;
}
