import { Migration } from '@mikro-orm/migrations';

/**
 * Triage on arrival, the list's analysis and its filters, corrections (issue 45):
 * - `accounts.auto_triage` (the setting) and `auto_triage_from` (mail sent before it is not
 *   triaged by itself: set to three days before the moment it was turned on);
 * - `mail_messages.is_bulk` (List-Unsubscribe or Precedence bulk/list/junk, read at sync);
 * - `mail_threads.latest_message_id`: the thread's latest message as the AI routes take it
 *   (sent_at, provider_message_id; any label), kept by refreshThreads, so the list joins the
 *   analysis of that message by its unique key, one row per thread;
 * - a correction on the analysis row: the user's values replace the model's, which are kept;
 * - `triage_attempts`: a message whose analysis on arrival failed, and when to try again.
 */
export class Migration20261202120000 extends Migration {
  override name = 'Migration20261202120000';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "accounts" add "auto_triage" boolean not null default false, add "auto_triage_from" timestamptz null;`,
    );
    this.addSql(`alter table "mail_messages" add "is_bulk" boolean not null default false;`);
    this.addSql(`alter table "mail_threads" add "latest_message_id" uuid null;`);
    this.addSql(
      `update "mail_threads" t set "latest_message_id" = (select m.id from "mail_messages" m where m.thread_id = t.id order by m.sent_at desc, m.provider_message_id desc limit 1);`,
    );
    this.addSql(
      `alter table "mail_threads" add constraint "mail_threads_latest_message_id_foreign" foreign key ("latest_message_id") references "mail_messages" ("id") on delete set null;`,
    );
    // The foreign key's own index: deleting a message must not scan every thread.
    this.addSql(`create index "mail_threads_latest_message_idx" on "mail_threads" ("latest_message_id");`);
    this.addSql(
      `create index "mail_threads_inbox_unread_idx" on "mail_threads" ("account_id", "last_message_at" desc, "id" desc) where "in_inbox" and "is_unread";`,
    );
    this.addSql(
      `alter table "analyses" add "corrected_at" timestamptz null, add "model_priority" varchar(255) null, add "model_reply_status" varchar(255) null;`,
    );
    this.addSql(
      `create index "analyses_corrections_idx" on "analyses" ("account_id", "corrected_at" desc) where "corrected_at" is not null;`,
    );
    this.addSql(
      `create table "triage_attempts" ("message_id" uuid not null primary key references "mail_messages" ("id") on delete cascade, "account_id" uuid not null references "accounts" ("id") on delete cascade, "attempts" int not null, "code" varchar(64) not null, "retry_at" timestamptz not null);`,
    );
    this.addSql(`create index "triage_attempts_account_idx" on "triage_attempts" ("account_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "triage_attempts";`);
    this.addSql(`drop index if exists "analyses_corrections_idx";`);
    this.addSql(
      `alter table "analyses" drop column "corrected_at", drop column "model_priority", drop column "model_reply_status";`,
    );
    this.addSql(`drop index if exists "mail_threads_inbox_unread_idx";`);
    this.addSql(`drop index if exists "mail_threads_latest_message_idx";`);
    this.addSql(
      `alter table "mail_threads" drop constraint "mail_threads_latest_message_id_foreign", drop column "latest_message_id";`,
    );
    this.addSql(`alter table "mail_messages" drop column "is_bulk";`);
    this.addSql(`alter table "accounts" drop column "auto_triage", drop column "auto_triage_from";`);
  }
}
