/**
 * Issue 45's row: analysis on arrival (settings `autoTriage`) under a burst of new mail over
 * many accounts. The burst has a known mix: most personal (eligible), the rest in a skipped
 * category (Promotions, Social, Updates, Forums), bulk by its headers (List-Unsubscribe,
 * Precedence: bulk) or the owner's own. It is published as the notification row's is (the
 * Gmail stand-in's watch into Pub/Sub); the server syncs it and its `auto-triage` workers
 * analyse. Read back: when every eligible thread had its analysis (and that no other one got
 * one), each account's `auto-analyze` tokens next to its share, the OpenAI stand-in's peak of
 * requests in flight next to the workers' bound, and the upper bound each call reserved
 * (the server's own `upperBoundTokens` of the request as sent). The list's latency beside it
 * is read by `listWindow`: `GET /api/mail/threads?limit=50` at a fixed rate (an open loop).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type pg from 'pg';
import { upperBoundTokens } from '../../server/domain/ai/prompt.ts';
import type { GmailStandIn, NewMessage } from '../../stand-ins/gmail.stand-in.ts';
import type { OpenAIStandIn } from '../../stand-ins/openai.stand-in.ts';
import type { SignedIn } from '../infra.ts';
import { timed, type Send } from './heavy-thread.scenario.ts';

export type TriageKind = 'personal' | 'category' | 'bulk-header' | 'own';

const CATEGORIES = ['CATEGORY_PROMOTIONS', 'CATEGORY_SOCIAL', 'CATEGORY_UPDATES', 'CATEGORY_FORUMS'];
const PEOPLE = ['Ana Souza', 'Ben Okafor', 'Chen Wei', 'Dana Levi', 'Emil Novak', 'Fatima Zahra', 'Goran Ilic'];

/**
 * The a-th account's i-th new message: of every 10, seven personal (eligible), one in a skipped
 * category (rotating over the four by account), one bulk by its headers (List-Unsubscribe or
 * Precedence: bulk by account), one the owner's own (From the owner, in the inbox).
 */
export function triageMessage(email: string, a: number, i: number): { kind: TriageKind; message: NewMessage } {
  const slot = i % 10;
  const person = PEOPLE[(a + i) % PEOPLE.length]!;
  const from = { name: person, address: `${person.split(' ')[0]!.toLowerCase()}@partners.example` };
  const personal = ['INBOX', 'UNREAD', 'CATEGORY_PERSONAL'];
  if (slot < 7) {
    const bodyText = `Hi,\n\nCould you look at the ${i}th draft of the budget before Friday and tell me whether the numbers for account ${a} hold? I need an answer for the board.\n\nThanks,\n${person}`;
    return {
      kind: 'personal',
      message: { from, subject: `Budget draft ${i} for review`, labelIds: personal, bodyText },
    };
  }
  if (slot === 7)
    return {
      kind: 'category',
      message: {
        from: { name: 'Deals', address: 'news@shop.example' },
        subject: `Offer ${i}`,
        labelIds: ['INBOX', 'UNREAD', CATEGORIES[a % 4]!],
      },
    };
  if (slot === 8) {
    const header =
      a % 2
        ? { name: 'List-Unsubscribe', value: '<mailto:leave@lists.example>, <https://lists.example/u/1>' }
        : { name: 'Precedence', value: 'bulk' };
    return {
      kind: 'bulk-header',
      message: {
        from: { name: 'Team list', address: 'team@lists.example' },
        subject: `Digest ${i}`,
        labelIds: personal,
        headers: [header],
      },
    };
  }
  return {
    kind: 'own',
    message: {
      from: { name: 'Me', address: email },
      to: { name: 'Me', address: email },
      subject: `Note to self ${i}`,
      labelIds: ['INBOX', 'UNREAD'],
    },
  };
}

export interface ListWindow extends Latency {
  /** control: the same burst again with autoTriage off, until every message was stored. */
  kind: 'idle' | 'burst' | 'control';
  seconds: number;
  /** Epoch ms of the first request sent, of the last answer, and (burst) when every new message was stored. */
  span: { from: number; to: number; storedAt?: number };
  non200: number;
  /** Burst only: the requests sent before every new message was stored (the syncs and the first analyses), and after (the triage alone). */
  syncing?: Latency;
  afterStored?: Latency;
  /** The bench process's own event-loop delay over the window (its client and the stand-ins share it): p99 / max ms. */
  clientLoop: { p99Ms: number; maxMs: number };
}

/** The client's timings; `serverP99Ms`: the server's own (its request log's `ms` over the same span, filled in by the phase). */
export type Latency = {
  requests: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  serverP99Ms?: number | null;
};

export const listQuantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]! : null;
};
const round1 = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `GET /api/mail/threads?limit=50` for `account` at `rate` per second, each request sent on
 * schedule whether the one before answered or not, for `seconds` or until `until` resolves.
 */
export async function listWindow(
  kind: ListWindow['kind'],
  account: SignedIn,
  rate: number,
  until: { seconds: number } | { done: Promise<unknown>; storedAt?: () => number | null },
): Promise<ListWindow> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const send: Send = (path, init) => account.browser.fetch(path, init);
  const samples: { at: number; ms: number; status: number }[] = [];
  const pending: Promise<void>[] = [];
  let stopped = false;
  if ('done' in until) void until.done.finally(() => (stopped = true));
  const t0 = performance.now();
  const from = Date.now();
  const end = 'seconds' in until ? t0 + until.seconds * 1000 : Infinity;
  for (let i = 0; ; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    if (stopped || performance.now() >= end) break;
    const at = Date.now();
    pending.push(
      timed(send, '/api/mail/threads?limit=50', '10.45.0.1', 30_000).then((s) => void samples.push({ at, ...s })),
    );
  }
  const seconds = Math.round((performance.now() - t0) / 100) / 10;
  await Promise.all(pending);
  loop.disable();
  const lag = (ns: number) => Math.round(ns / 1e5) / 10;
  const storedAt = 'done' in until ? (until.storedAt?.() ?? null) : null;
  const part = (xs: typeof samples): Latency => {
    const v = xs.map((s) => s.ms);
    return {
      requests: v.length,
      p50Ms: round1(listQuantile(v, 0.5)),
      p99Ms: round1(listQuantile(v, 0.99)),
      maxMs: round1(listQuantile(v, 1)),
    };
  };
  return {
    kind,
    seconds,
    span: { from, to: Date.now(), ...(storedAt === null ? {} : { storedAt }) },
    ...part(samples),
    non200: samples.filter((s) => s.status !== 200).length,
    ...(storedAt === null
      ? {}
      : {
          syncing: part(samples.filter((s) => s.at < storedAt)),
          afterStored: part(samples.filter((s) => s.at >= storedAt)),
        }),
    clientLoop: { p99Ms: lag(loop.percentile(99)), maxMs: lag(loop.max) },
  };
}

export interface TriageRun {
  name: string;
  accounts: number;
  messages: number;
  eligible: number;
  byKind: Record<TriageKind, number>;
  /** AI_DAILY_TOKEN_BUDGET, the share (AUTO_TRIAGE_BUDGET_SHARE) and the share in tokens (floored, as the server counts it). */
  budget: { daily: number; share: number; shareTokens: number };
  /** What the OpenAI stand-in answered: fixed usage per call and its latency. */
  ai: { latencyMs: number; promptTokens: number; completionTokens: number };
  /** The Gmail stand-in's latency per request during the burst. */
  mailLatencyMs: number;
  /** From the first new message to the last one's row, and to the last analysis of an eligible one (`created_at`); null: not within the time limit. */
  storedMs: number | null;
  analysedMs: number | null;
  stored: number;
  /** Eligible threads with an analysis; ineligible ones with one (goal 0). */
  analysed: number;
  ineligibleAnalysed: number;
  /** The AI's time over what the bound allows from the first new message to the last analysis: calls × latency / (bound × analysedMs). */
  aiUtilisation: number | null;
  /** Analyses stored in each 10 s from the first new message (the workers' pace over the burst). */
  analysesPer10s: number[];
  /** Chat requests the stand-in got, and of them the most in flight at once; the bound: workers per instance × instances. */
  aiCalls: number;
  peakInFlight: number;
  bound: number;
  /** Per account: `auto-analyze` tokens spent less the share (max over accounts; goal ≤ 0), the least left, rows still reserved, analyses. */
  tokens: {
    maxOverShare: number;
    maxSpent: number;
    minLeft: number;
    maxLeft: number;
    reservedLeft: number;
    analysesMin: number;
    analysesMax: number;
    otherOperations: number;
  };
  /** The upper bound each call reserved (the server's upperBoundTokens of the request as sent): min / median / max. */
  reservation: { min: number; median: number; max: number } | null;
  /** After the burst, the on-demand route on an eligible thread left without one (small budget only): its status and the operation charged. */
  onDemand?: { status: number; operation: string | null };
  /** The control burst (autoTriage off, default-budget run only): its messages that got an analysis (goal 0). */
  controlAnalysed?: number;
}

export interface AutoTriageResult {
  instances: number;
  workersPerInstance: number;
  runs: TriageRun[];
  /** The list of the first account of the default-budget run: idle before, during the burst, idle after. */
  list: ListWindow[];
  /** p99 during the burst over idle before (goal ≤ 2), and over idle after. */
  listP99Ratio: number | null;
  listP99RatioAfter: number | null;
  /** p99 of the burst's requests sent once every message was stored (the triage alone) over idle before. */
  listP99RatioTriage: number | null;
}

/** The upper bound the server reserved for each chat request the stand-in recorded. */
export function reservations(openai: OpenAIStandIn): number[] {
  return openai.requests
    .filter((r) => r.endpoint === 'chat' && r.body && typeof r.body === 'object')
    .map((r) => {
      const b = r.body as {
        messages: { role: string; content: string }[];
        max_completion_tokens: number;
        response_format: { json_schema: { schema: unknown } };
      };
      const text = (role: string) => b.messages.find((m) => m.role === role)?.content ?? '';
      return upperBoundTokens(
        { system: text('system'), user: text('user'), maxOutputTokens: b.max_completion_tokens },
        b.response_format.json_schema.schema,
      );
    });
}

export interface BurstMessages {
  /** Provider message id -> its account and kind. */
  byId: Map<string, { accountId: string; kind: TriageKind }>;
  startedAt: number;
}

/** Adds `perAccount` messages to every account round-robin (each notified by the stand-in's watch). */
export function addBurst(gmail: GmailStandIn, accounts: SignedIn[], perAccount: number): BurstMessages {
  const byId: BurstMessages['byId'] = new Map();
  const startedAt = Date.now();
  for (let i = 0; i < perAccount; i++) {
    accounts.forEach((acc, a) => {
      const { kind, message } = triageMessage(acc.email, a, i);
      byId.set(gmail.addMessage(acc.email, message).id, { accountId: acc.accountId, kind });
    });
  }
  return { byId, startedAt };
}

/** Stored, analysed (eligible / not) messages of the burst, and the last row times (ms after its start). */
export async function readBurst(pool: pg.Pool, burst: BurstMessages) {
  const ids = [...burst.byId.keys()];
  const { rows } = await pool.query<{ id: string; stored_at: Date; analysed_at: Date | null }>(
    `/*bench*/ select m.provider_message_id as id, m.created_at as stored_at, a.created_at as analysed_at
       from mail_messages m left join analyses a on a.message_id = m.id where m.provider_message_id = any($1::text[])`,
    [ids],
  );
  let analysed = 0;
  let ineligibleAnalysed = 0;
  let storedAt = 0;
  let analysedAt = 0;
  for (const r of rows) {
    storedAt = Math.max(storedAt, r.stored_at.getTime());
    if (!r.analysed_at) continue;
    if (burst.byId.get(r.id)?.kind === 'personal') {
      analysed++;
      analysedAt = Math.max(analysedAt, r.analysed_at.getTime());
    } else ineligibleAnalysed++;
  }
  return {
    stored: rows.length,
    analysed,
    ineligibleAnalysed,
    storedMs: storedAt - burst.startedAt,
    analysedMs: analysedAt - burst.startedAt,
  };
}

/** The auto-triage queue: a job running, or one due within a minute (one waiting for the next UTC day is neither). */
export async function triageBusy(pool: pg.Pool): Promise<boolean> {
  const { rows } = await pool.query<{ busy: boolean }>(
    `/*bench*/ select exists (select 1 from pgboss.job where name = 'auto-triage'
        and (state = 'active' or (state in ('created', 'retry') and start_after < now() + interval '1 minute'))) as busy`,
  );
  return rows[0]!.busy;
}

/** Per account, the day's `auto-analyze` tokens and analyses, other operations' rows, and rows still reserved. */
export async function readTokens(
  pool: pg.Pool,
  accountIds: string[],
  shareTokens: number,
): Promise<TriageRun['tokens']> {
  const { rows } = await pool.query<{ auto: string; analyses: string; other: string; reserved: string }>(
    `/*bench*/ select coalesce(sum(u.tokens) filter (where u.operation = 'auto-analyze'), 0) as auto,
            count(u.id) filter (where u.operation = 'auto-analyze') as analyses, count(u.id) filter (where u.operation <> 'auto-analyze') as other,
            count(u.id) filter (where u.state = 'reserved') as reserved
       from unnest($1::uuid[]) as acc(id) left join ai_usage u on u.account_id = acc.id group by acc.id`,
    [accountIds],
  );
  const auto = rows.map((r) => Number(r.auto));
  const analyses = rows.map((r) => Number(r.analyses));
  return {
    maxOverShare: Math.max(...auto) - shareTokens,
    maxSpent: Math.max(...auto),
    minLeft: shareTokens - Math.max(...auto),
    maxLeft: shareTokens - Math.min(...auto),
    reservedLeft: rows.reduce((a, r) => a + Number(r.reserved), 0),
    analysesMin: Math.min(...analyses),
    analysesMax: Math.max(...analyses),
    otherOperations: rows.reduce((a, r) => a + Number(r.other), 0),
  };
}
