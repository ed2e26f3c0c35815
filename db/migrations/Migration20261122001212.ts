/**
 * The inbox total per account (mail_inbox_counts), kept exact by statement-level triggers on
 * mail_threads that fold each statement's transition tables into one upsert per account, so
 * the thread list no longer counts the whole inbox on every request. Row-level triggers
 * would update the same counter row once per thread (a bulk write of 100k threads would
 * chain 100k row versions in one transaction). Written by hand after the generated part:
 * the functions, the triggers, and the backfill of the existing threads (after the triggers,
 * whose creation locks mail_threads against writes until this migration commits).
 *
 * Also an index on lower(email): the notification poller resolves accounts by it.
 */
import { Migration } from '@mikro-orm/migrations';

export class Migration20261122001212 extends Migration {
  override name = 'Migration20261122001212';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "mail_inbox_counts" ("account_id" uuid not null, "total" int not null default 0, primary key ("account_id"));`,
    );

    this.addSql(`create index "accounts_email_lower_idx" on "accounts" (lower("email"));`);

    this.addSql(
      `alter table "mail_inbox_counts" add constraint "mail_inbox_counts_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(`create function "mail_inbox_counts_on_insert"() returns trigger language plpgsql as $$
begin
  insert into mail_inbox_counts as c (account_id, total)
    select account_id, count(*) from new_rows where in_inbox group by account_id
  on conflict (account_id) do update set total = c.total + excluded.total;
  return null;
end $$;`);
    this.addSql(`create function "mail_inbox_counts_on_update"() returns trigger language plpgsql as $$
begin
  insert into mail_inbox_counts as c (account_id, total)
    select account_id, sum(delta) from (
      select account_id, 1 as delta from new_rows where in_inbox
      union all
      select account_id, -1 from old_rows where in_inbox
    ) d group by account_id having sum(delta) <> 0
  on conflict (account_id) do update set total = c.total + excluded.total;
  return null;
end $$;`);
    this.addSql(`create function "mail_inbox_counts_on_delete"() returns trigger language plpgsql as $$
begin
  update mail_inbox_counts c set total = c.total - d.n
    from (select account_id, count(*) as n from old_rows where in_inbox group by account_id) d
   where c.account_id = d.account_id;
  return null;
end $$;`);
    this.addSql(`create function "mail_inbox_counts_on_truncate"() returns trigger language plpgsql as $$
begin
  delete from mail_inbox_counts;
  return null;
end $$;`);
    this.addSql(
      `create trigger "mail_inbox_counts_insert" after insert on "mail_threads" referencing new table as new_rows for each statement execute function "mail_inbox_counts_on_insert"();`,
    );
    this.addSql(
      `create trigger "mail_inbox_counts_update" after update on "mail_threads" referencing old table as old_rows new table as new_rows for each statement execute function "mail_inbox_counts_on_update"();`,
    );
    this.addSql(
      `create trigger "mail_inbox_counts_delete" after delete on "mail_threads" referencing old table as old_rows for each statement execute function "mail_inbox_counts_on_delete"();`,
    );
    this.addSql(
      `create trigger "mail_inbox_counts_truncate" after truncate on "mail_threads" for each statement execute function "mail_inbox_counts_on_truncate"();`,
    );
    this.addSql(
      `insert into "mail_inbox_counts" ("account_id", "total") select "account_id", count(*) from "mail_threads" where "in_inbox" group by "account_id";`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger if exists "mail_inbox_counts_insert" on "mail_threads";`);
    this.addSql(`drop trigger if exists "mail_inbox_counts_update" on "mail_threads";`);
    this.addSql(`drop trigger if exists "mail_inbox_counts_delete" on "mail_threads";`);
    this.addSql(`drop trigger if exists "mail_inbox_counts_truncate" on "mail_threads";`);
    this.addSql(
      `drop function if exists "mail_inbox_counts_on_insert"(), "mail_inbox_counts_on_update"(), "mail_inbox_counts_on_delete"(), "mail_inbox_counts_on_truncate"();`,
    );

    this.addSql(`drop table if exists "mail_inbox_counts" cascade;`);

    this.addSql(`drop index "accounts_email_lower_idx";`);
  }
}
