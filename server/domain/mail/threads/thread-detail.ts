/**
 * A thread's detail: every message, oldest first, with the bodies of the newest up to the
 * thread's body budget. The bodies come from the body cache while they stay as stored, else
 * from PostgreSQL in one statement; one account builds one answer at a time (open-gate.ts);
 * the answer carries its JSON text in parts (serialised-answer.ts), the bodies' as cached.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AttachmentMeta } from '../../../../db/entities/index.ts';
import type { Message, ThreadDetail } from '../../../../shared/schemas/mail.ts';
import { AppError } from '../../errors.ts';
import { preparedStatement, type RunPrepared } from '../../prepared-sql.ts';
import { withAnswerParts } from '../../serialised-answer.ts';
import { toIso } from '../../time.ts';
import { serialiseBodies, type BodyCache, type CachedBodies } from './body-cache.ts';
import type { OpenGate } from './open-gate.ts';
import type { ThreadBodies } from './thread-bodies.service.ts';

/**
 * The bodies one thread answer carries at most (UTF-8 bytes as stored, text and HTML together,
 * so at most as many UTF-16 characters), newest message first. Every body read, held and
 * serialised is event-loop work and memory that grows with it: a hundred messages at
 * MAIL_LIMITS.body twice is 50 M characters in one answer. 2 M holds dozens of ordinary messages
 * (a few KB each); past it the older ones are left out, in PostgreSQL, and fetched one by one
 * (messageBody). The newest message is always whole. Measured in bytes because PostgreSQL
 * knows a stored value's byte length without decompressing it: counting characters made it
 * decompress every body of the thread on every open (about 100 ms of its CPU for 100 messages
 * of 192 KB).
 */
export const THREAD_BODY_BUDGET = 2 * 1024 * 1024;

const THREAD_ROW = preparedStatement(
  'mia_thread_row',
  'select id, provider_thread_id, subject, is_unread from mail_threads where id = ? and account_id = ?',
);

/** The version a stored body is cached under: it moves whenever the body is stored again. */
const BODY_VERSION =
  "case when body_fetched_at is not null then body_fetched_at::text || '/' || coalesce(body_sanitizer, 0) end";

/** Every message of the thread without its bodies: which ones the answer carries whole (`kept`) and their bodies' version. */
const THREAD_MESSAGES = preparedStatement(
  'mia_thread_messages',
  `select id, from_name, from_address, subject, snippet, sent_at, is_unread, attachments, kept, body_version
   from (
     select id, provider_message_id, from_name, from_address, subject, snippet, sent_at, is_unread, attachments, ${BODY_VERSION} as body_version,
       row_number() over newest = 1 or sum(coalesce(octet_length(body_text), 0) + coalesce(octet_length(body_html), 0)) over newest <= ? as kept
     from mail_messages where thread_id = ? and account_id = ?
     window newest as (order by sent_at desc, provider_message_id desc rows between unbounded preceding and current row)
   ) m order by sent_at, provider_message_id`,
);

/** The bodies of some of the thread's messages (those the cache does not hold). */
const THREAD_BODIES = preparedStatement(
  'mia_thread_bodies',
  `select id, body_text, body_html, ${BODY_VERSION} as body_version from mail_messages where id = any(?::uuid[]) and thread_id = ? and account_id = ?`,
);

/** A stored message's attachments as answers list them (the stored metadata may carry more). */
export const attachmentList = (stored: AttachmentMeta[] | null) =>
  (stored ?? []).map((a) => ({ filename: a.filename, mimeType: a.mimeType, size: a.size }));

interface MessageRow {
  id: string;
  from_name: string;
  from_address: string;
  subject: string;
  snippet: string;
  sent_at: Date;
  is_unread: boolean;
  attachments: AttachmentMeta[] | null;
  kept: boolean;
  body_version: string | null;
}

/**
 * The bodies of the kept messages: from the cache when it holds their version, the others in
 * one statement (and then held). A body stored again between the two statements is answered
 * in its newer version.
 */
async function keptBodies(
  deps: ThreadReadDeps,
  accountId: string,
  threadId: string,
  rows: MessageRow[],
): Promise<Map<string, CachedBodies>> {
  const out = new Map<string, CachedBodies>();
  const missing: string[] = [];
  for (const r of rows) {
    if (!r.kept || r.body_version === null) continue;
    const hit = deps.cache.get(r.id, r.body_version);
    if (hit) out.set(r.id, hit);
    else missing.push(r.id);
  }
  if (missing.length) {
    const read = await deps.prepared<{
      id: string;
      body_text: string | null;
      body_html: string | null;
      body_version: string | null;
    }>(THREAD_BODIES, [missing, threadId, accountId]);
    for (const b of read) {
      const text = b.body_text ?? '';
      const html = b.body_html ?? '';
      out.set(
        b.id,
        b.body_version === null ? serialiseBodies(text, html).bodies : deps.cache.put(b.id, b.body_version, text, html),
      );
    }
  }
  return out;
}

export interface ThreadReadDeps {
  prepared: RunPrepared;
  bodies: ThreadBodies;
  cache: BodyCache;
  gate: OpenGate;
}

export async function threadDetail(
  em: EntityManager,
  deps: ThreadReadDeps,
  accountId: string,
  threadId: string,
  budget = THREAD_BODY_BUDGET,
): Promise<ThreadDetail> {
  await deps.bodies.ensure(em, accountId, threadId);
  return deps.gate.run(accountId, (served) => readDetail(deps, accountId, threadId, budget, served));
}

async function readDetail(
  deps: ThreadReadDeps,
  accountId: string,
  threadId: string,
  budget: number,
  served: (bytes: number) => void,
): Promise<ThreadDetail> {
  const [thread] = await deps.prepared<{ id: string; provider_thread_id: string; subject: string; is_unread: boolean }>(
    THREAD_ROW,
    [threadId, accountId],
  );
  if (!thread) throw new AppError('NOT_FOUND');
  const rows = await deps.prepared<MessageRow>(THREAD_MESSAGES, [budget, threadId, accountId]);
  const kept = await keptBodies(deps, accountId, threadId, rows);
  const bodies = rows.map((m) => kept.get(m.id));
  served(bodies.reduce((n, b) => n + (b ? b.jsonText.length + b.jsonHtml.length : 0), 0));
  const messages = rows.map(
    (m, i): Message => ({
      id: m.id,
      threadId: thread.id,
      fromName: m.from_name,
      fromAddress: m.from_address,
      subject: m.subject,
      snippet: m.snippet,
      sentAt: toIso(m.sent_at),
      isUnread: m.is_unread,
      bodyText: bodies[i]?.text ?? '',
      bodyHtml: bodies[i]?.html ?? '',
      attachments: attachmentList(m.attachments),
      bodyOmitted: !m.kept,
    }),
  );
  const answer: ThreadDetail = {
    id: thread.id,
    mailThreadId: thread.provider_thread_id,
    subject: thread.subject,
    isUnread: thread.is_unread,
    messages,
  };
  // Serialised, the bodies are the cached JSON texts: sent as they are (REST), or copied as they are by JSON.stringify (/trpc).
  const toJson = () => ({
    ...answer,
    messages: messages.map((m, i) => {
      const raw = bodies[i]?.raw();
      return raw ? { ...m, bodyText: raw.text, bodyHtml: raw.html } : m;
    }),
  });
  return withAnswerParts(answer, toJson, () => answerParts(answer, bodies));
}

/**
 * The answer's JSON text as UTF-8 parts: its small fields serialised here, each body the
 * cache's buffer as it is. Field for field what JSON.stringify writes for the object (the
 * order of ThreadDetail and Message).
 */
function answerParts(answer: ThreadDetail, bodies: (CachedBodies | undefined)[]): Buffer[] {
  const parts: Buffer[] = [];
  const { messages, ...head } = answer;
  let text = `${JSON.stringify(head).slice(0, -1)},"messages":[`;
  messages.forEach((m, i) => {
    const { bodyText, bodyHtml, attachments, bodyOmitted, ...meta } = m;
    const b = bodies[i];
    text += `${i ? ',' : ''}${JSON.stringify(meta).slice(0, -1)},"bodyText":`;
    if (b) {
      parts.push(Buffer.from(text), b.jsonText, Buffer.from(',"bodyHtml":'), b.jsonHtml);
      text = '';
    } else {
      text += `${JSON.stringify(bodyText)},"bodyHtml":${JSON.stringify(bodyHtml)}`;
    }
    text += `,"attachments":${JSON.stringify(attachments)},"bodyOmitted":${bodyOmitted}}`;
  });
  parts.push(Buffer.from(`${text}]}`));
  return parts;
}
