import { Migration } from '@mikro-orm/migrations';

/**
 * The live inbox on a job engine (issue 16): an account's sync trouble is kept on its row
 * (the code of the last failure, since when it fails, and when its job was set aside after
 * its retries), and messages the provider will not return or that fail parsing are set aside
 * one by one while the rest of the account moves on.
 */
export class Migration20261125200000 extends Migration {

  override name = 'Migration20261125200000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sync_states" add "last_error_code" varchar(64) null, add "failing_since" timestamptz null, add "set_aside_at" timestamptz null;`);
    this.addSql(`create table "mail_set_aside" ("account_id" uuid not null, "provider_message_id" varchar(255) not null, "reason" varchar(64) not null, "attempts" int not null default 1, "first_seen_at" timestamptz not null default now(), "retry_after" timestamptz not null, constraint "mail_set_aside_pkey" primary key ("account_id", "provider_message_id"));`);
    this.addSql(`alter table "mail_set_aside" add constraint "mail_set_aside_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "mail_set_aside";`);
    this.addSql(`alter table "sync_states" drop column "last_error_code", drop column "failing_since", drop column "set_aside_at";`);
  }

}
