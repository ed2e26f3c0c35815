/**
 * The open live event streams of the cluster (GET /api/mail/events, `mail.events`): one row
 * per open stream, so the limits per session and per account hold across instances that
 * share only PostgreSQL. A row lives while its instance refreshes it (its heartbeat moves
 * `expires_at` on); a crashed instance's rows lapse. SQL in server/domain/events/stream-slots.ts.
 */
import { defineEntity, p } from '@mikro-orm/core';
import { Account } from './account.entity.ts';

export const EventStreamSlotSchema = defineEntity({
  name: 'EventStreamSlot',
  tableName: 'event_streams',
  properties: {
    id: p.uuid().primary(),
    account: () => p.manyToOne(Account).mapToPk().deleteRule('cascade'),
    /** The session's stream key (a hash of its CSRF token, never the token). */
    sessionKey: p.string().length(32),
    /** The instance holding the stream (random per process). */
    instance: p.uuid().index(),
    expiresAt: p.datetime().index(),
  },
  indexes: [{ properties: ['account', 'expiresAt'] }],
});
export class EventStreamSlot extends EventStreamSlotSchema.class {}
EventStreamSlotSchema.setClass(EventStreamSlot);
