import { Migration } from '@mikro-orm/migrations';

/**
 * The ids of an inbox listing under way (a backfill or a resync): listed by id only, 500 a
 * page (the inbox, and before it, on a resync, the inbox's unread messages), then compared with the store, so that only unknown messages are fetched and known
 * ones are relabelled from the ids (server/domain/mail/sync/listing-plan.ts). `pos` keeps the
 * listing's newest-first order for fetching; `pending`: listed, unknown, not fetched yet.
 * Emptied when the listing ends.
 */
export class Migration20261126180000 extends Migration {
  override name = 'Migration20261126180000';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "mail_listing" ("account_id" uuid not null, "provider_message_id" varchar(255) not null, "pos" int not null default 0, "unread" boolean not null default false, "inbox" boolean not null default false, "pending" boolean not null default false, constraint "mail_listing_pkey" primary key ("account_id", "provider_message_id"));`,
    );
    this.addSql(
      `alter table "mail_listing" add constraint "mail_listing_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );
    // The ids still to fetch, newest first: read without joining the store (whose statistics lag a fast backfill).
    this.addSql(`create index "mail_listing_pending_index" on "mail_listing" ("account_id", "pos") where "pending";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "mail_listing" cascade;`);
  }
}
