// What the demo says about a thread's triage (badges, the analysis line, the correction's
// choices) and which threads each list filter asks for. Pure functions of the API's values,
// with no DOM and no client, so the unit tests import them and the page only renders them.
import type { z } from 'zod';
import type { Analysis, priority, replyStatus } from '../../shared/schemas/ai.ts';
import type { threadListInput, ThreadSummary } from '../../shared/schemas/mail.ts';

export type Priority = z.infer<typeof priority>;
export type ReplyStatus = z.infer<typeof replyStatus>;

/** Both kinds of analysis the page holds: the list's summary, or the full one Analyze answers (reason, suggestion). */
export type ShownAnalysis = NonNullable<ThreadSummary['analysis']> & { reason?: string; suggestedAction?: string };

/** In the order the correction's select offers them (most pressing first). */
export const PRIORITY_LABELS: Record<Priority, string> = {
  URGENT: 'Urgent',
  IMPORTANT: 'Important',
  NORMAL: 'Normal',
  LOW: 'Low',
};
export const REPLY_LABELS: Record<ReplyStatus, string> = {
  NEEDS_REPLY: 'Needs reply',
  WAITING_ON_OTHERS: 'Waiting on others',
  NO_REPLY_NEEDED: 'No reply needed',
};

/** The `[value, shown text]` pairs of a select over one of the label tables. */
export const choices = <K extends string>(labels: Record<K, string>): [K, string][] =>
  Object.entries(labels) as [K, string][];

export interface Badge {
  text: string;
  /** The CSS class: its kind and value (`badge priority-urgent`), so the stylesheet alone colours it. */
  cls: string;
  title: string;
}

const slug = (v: string) => v.toLowerCase().replace(/_/g, '-');
export const percent = (confidence: number) => `${Math.round(confidence * 100)} %`;

/**
 * A row's badges: priority and reply status, and a quiet mark when the user corrected them;
 * none while the thread has no analysis (no guess in its place: "not analysed" is not "normal").
 */
export function badges(a: ShownAnalysis | null): Badge[] {
  if (!a) return [];
  const by = a.corrected ? 'corrected by you' : `the model's, confidence ${percent(a.confidence)}`;
  const out: Badge[] = [
    {
      text: PRIORITY_LABELS[a.priority],
      cls: `badge priority-${slug(a.priority)}`,
      title: `Priority: ${PRIORITY_LABELS[a.priority]} (${by})`,
    },
    {
      text: REPLY_LABELS[a.replyStatus],
      cls: `badge reply-${slug(a.replyStatus)}`,
      title: `${REPLY_LABELS[a.replyStatus]} (${by})`,
    },
  ];
  if (a.corrected) out.push({ text: 'corrected', cls: 'corrected', title: 'You corrected this analysis' });
  return out;
}

/** The thread view's one-line summary of an analysis. */
export function summaryLine(a: ShownAnalysis): string {
  const who = a.corrected ? 'corrected by you' : `confidence ${percent(a.confidence)}`;
  return `Priority ${PRIORITY_LABELS[a.priority]} · ${REPLY_LABELS[a.replyStatus].toLowerCase()} · ${who}`;
}

/** What Analyze or a correction answered, as the page shows it. */
export function fromAnalysis(a: Analysis): ShownAnalysis {
  return {
    priority: a.priority,
    replyStatus: a.replyStatus,
    confidence: a.confidence,
    corrected: a.correctedAt !== null,
    reason: a.reason,
    suggestedAction: a.suggestedAction,
  };
}

/** The fields of a correction that differ from what is shown (the API takes either or both); null when none does. */
export function correction(
  shown: ShownAnalysis,
  chosen: { priority: Priority; replyStatus: ReplyStatus },
): { priority?: Priority; replyStatus?: ReplyStatus } | null {
  const out: { priority?: Priority; replyStatus?: ReplyStatus } = {};
  if (chosen.priority !== shown.priority) out.priority = chosen.priority;
  if (chosen.replyStatus !== shown.replyStatus) out.replyStatus = chosen.replyStatus;
  return Object.keys(out).length ? out : null;
}

type ListInput = z.input<typeof threadListInput>;
type FilterQuery = Pick<ListInput, 'priority' | 'replyStatus' | 'unread'>;

/** The list's filters, in the order index.html shows them (a test holds the two together). */
export const FILTERS = {
  all: { label: 'All', query: {} as FilterQuery, empty: 'No conversations yet.' },
  'needs-reply': {
    label: 'Needs reply',
    query: { replyStatus: 'NEEDS_REPLY' } as FilterQuery,
    empty: 'No analysed conversation needs a reply.',
  },
  urgent: {
    label: 'Urgent',
    query: { priority: 'URGENT' } as FilterQuery,
    empty: 'No analysed conversation is urgent.',
  },
  unread: { label: 'Unread', query: { unread: true } as FilterQuery, empty: 'No unread conversations.' },
} as const;
export type FilterId = keyof typeof FILTERS;

export const isFilterId = (v: unknown): v is FilterId => typeof v === 'string' && Object.hasOwn(FILTERS, v);

/** The list read of one page of one filter: paging keeps the filter, a filter starts at its first page. */
export function listInput(filter: FilterId, offset: number, limit: number): ListInput {
  return { limit, offset, ...FILTERS[filter].query };
}

/** Under a triage filter only analysed threads can match: the empty list says how a thread gets there. */
export function emptyHint(filter: FilterId): string | null {
  return 'replyStatus' in FILTERS[filter].query || 'priority' in FILTERS[filter].query
    ? 'Open a conversation and press Analyze; with “Triage new mail” on, new mail is analysed as it arrives.'
    : null;
}
