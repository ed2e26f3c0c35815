/**
 * The demo's triage wording and filters (demo/web/triage.ts): badges only for an analysed
 * thread, the correction's changed fields only, and each filter's list read as the server's
 * own input schema parses it, paging included.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { priority, replyStatus } from '../../../shared/schemas/ai.ts';
import { threadListInput } from '../../../shared/schemas/mail.ts';
import {
  badges,
  choices,
  correction,
  emptyHint,
  FILTERS,
  fromAnalysis,
  isFilterId,
  listInput,
  PRIORITY_LABELS,
  REPLY_LABELS,
  summaryLine,
  type FilterId,
} from '../../../demo/web/triage.ts';

const model = { priority: 'URGENT', replyStatus: 'NEEDS_REPLY', confidence: 0.876, corrected: false } as const;

describe('triage badges', () => {
  it('shows none for a thread without an analysis', () => {
    assert.deepEqual(badges(null), []);
  });

  it('shows priority and reply status, with the confidence as their title', () => {
    assert.deepEqual(badges(model), [
      { text: 'Urgent', cls: 'badge priority-urgent', title: "Priority: Urgent (the model's, confidence 88 %)" },
      { text: 'Needs reply', cls: 'badge reply-needs-reply', title: "Needs reply (the model's, confidence 88 %)" },
    ]);
  });

  it('marks a corrected analysis, and says whose values they are', () => {
    const shown = badges({ priority: 'LOW', replyStatus: 'WAITING_ON_OTHERS', confidence: 0.5, corrected: true });
    assert.deepEqual(
      shown.map((b) => [b.text, b.cls]),
      [
        ['Low', 'badge priority-low'],
        ['Waiting on others', 'badge reply-waiting-on-others'],
        ['corrected', 'corrected'],
      ],
    );
    assert.match(shown[0]!.title, /corrected by you/);
    assert.doesNotMatch(shown[0]!.title, /confidence/);
  });

  it('has a label for every value the API can answer', () => {
    assert.deepEqual(Object.keys(PRIORITY_LABELS), priority.options);
    assert.deepEqual(Object.keys(REPLY_LABELS), replyStatus.options);
    assert.deepEqual(
      choices(REPLY_LABELS).map(([v]) => v),
      replyStatus.options,
    );
    for (const p of priority.options)
      for (const r of replyStatus.options)
        assert.equal(badges({ priority: p, replyStatus: r, confidence: 1, corrected: false }).length, 2);
  });

  it('sums an analysis up in one line', () => {
    assert.equal(summaryLine(model), 'Priority Urgent · needs reply · confidence 88 %');
    assert.equal(summaryLine({ ...model, corrected: true }), 'Priority Urgent · needs reply · corrected by you');
  });

  it("reads Analyze's answer: corrected when it has a correctedAt", () => {
    const a = {
      id: 'a',
      userId: 'u',
      messageId: 'm',
      priority: 'NORMAL',
      replyStatus: 'NO_REPLY_NEEDED',
      confidence: 0.7,
      reason: '<b>why</b>',
      suggestedAction: 'archive',
      model: 'x',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    } as const;
    assert.deepEqual(fromAnalysis({ ...a, correctedAt: null }), {
      priority: 'NORMAL',
      replyStatus: 'NO_REPLY_NEEDED',
      confidence: 0.7,
      corrected: false,
      reason: '<b>why</b>',
      suggestedAction: 'archive',
    });
    assert.equal(fromAnalysis({ ...a, correctedAt: '2026-01-02T00:00:00.000Z' }).corrected, true);
  });
});

describe('triage correction', () => {
  it('sends only what the user changed, nothing when nothing changed', () => {
    assert.equal(correction(model, { priority: 'URGENT', replyStatus: 'NEEDS_REPLY' }), null);
    assert.deepEqual(correction(model, { priority: 'LOW', replyStatus: 'NEEDS_REPLY' }), { priority: 'LOW' });
    assert.deepEqual(correction(model, { priority: 'URGENT', replyStatus: 'NO_REPLY_NEEDED' }), {
      replyStatus: 'NO_REPLY_NEEDED',
    });
    assert.deepEqual(correction(model, { priority: 'NORMAL', replyStatus: 'WAITING_ON_OTHERS' }), {
      priority: 'NORMAL',
      replyStatus: 'WAITING_ON_OTHERS',
    });
  });
});

describe('list filters', () => {
  const parsed = (filter: FilterId, offset = 0) => threadListInput.parse(listInput(filter, offset, 25));

  it('asks the server for what each filter names, as its input schema reads it', () => {
    assert.deepEqual(parsed('all'), { limit: 25, offset: 0 });
    assert.deepEqual(parsed('needs-reply'), { limit: 25, offset: 0, replyStatus: ['NEEDS_REPLY'] });
    assert.deepEqual(parsed('urgent'), { limit: 25, offset: 0, priority: ['URGENT'] });
    assert.deepEqual(parsed('unread'), { limit: 25, offset: 0, unread: true });
  });

  it('keeps the filter on every page', () => {
    assert.deepEqual(parsed('urgent', 50), { limit: 25, offset: 50, priority: ['URGENT'] });
    assert.deepEqual(parsed('unread', 25), { limit: 25, offset: 25, unread: true });
  });

  it('names its filters in the order the page shows them', () => {
    assert.deepEqual(
      Object.entries(FILTERS).map(([id, f]) => [id, f.label]),
      [
        ['all', 'All'],
        ['needs-reply', 'Needs reply'],
        ['urgent', 'Urgent'],
        ['unread', 'Unread'],
      ],
    );
    assert.equal(isFilterId('urgent'), true);
    for (const bad of [undefined, '', 'URGENT', 'toString', '__proto__'])
      assert.equal(isFilterId(bad), false, String(bad));
  });

  it('explains an empty triage filter, and only a triage filter', () => {
    assert.match(emptyHint('needs-reply')!, /Analyze/);
    assert.match(emptyHint('urgent')!, /Analyze/);
    assert.equal(emptyHint('all'), null);
    assert.equal(emptyHint('unread'), null);
  });
});
