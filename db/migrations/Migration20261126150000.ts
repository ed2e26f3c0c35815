import { Migration } from '@mikro-orm/migrations';

/**
 * The live events of each account (GET /api/mail/events, `mail.events`): a short log written
 * by the transaction that commits a change, so that a stream resumed on any instance with
 * `Last-Event-ID` gets what it missed. Each account keeps its newest rows only (pruned by the
 * writer, server/domain/events/announce.ts); the rows hold ids, never mail.
 */
export class Migration20261126150000 extends Migration {
  override name = 'Migration20261126150000';

  override up(): void | Promise<void> {
    this.addSql(`create table "mail_events" ("id" bigint generated always as identity primary key,
      "account_id" uuid not null references "accounts" ("id") on delete cascade,
      "kind" text not null, "thread_ids" uuid[] null, "created_at" timestamptz not null default now());`);
    this.addSql(`create index "mail_events_account_id_id_index" on "mail_events" ("account_id", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "mail_events";`);
  }
}
