import { Migration } from '@mikro-orm/migrations';

/**
 * The open live event streams of the cluster, one row each (GET /api/mail/events,
 * `mail.events`): the stream limits (per session, per account) count these rows, so they
 * hold across instances. Each row is kept alive by its instance's heartbeat and lapses at
 * `expires_at` when the instance is gone (server/domain/events/stream-slots.ts).
 */
export class Migration20261126183500 extends Migration {
  override name = 'Migration20261126183500';

  override up(): void | Promise<void> {
    this.addSql(`create table "event_streams" ("id" uuid not null primary key,
      "account_id" uuid not null references "accounts" ("id") on delete cascade,
      "session_key" varchar(32) not null, "instance" uuid not null, "expires_at" timestamptz not null);`);
    this.addSql(
      `create index "event_streams_account_id_expires_at_index" on "event_streams" ("account_id", "expires_at");`,
    );
    this.addSql(`create index "event_streams_instance_index" on "event_streams" ("instance");`);
    this.addSql(`create index "event_streams_expires_at_index" on "event_streams" ("expires_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "event_streams";`);
  }
}
