import { Migration } from '@mikro-orm/migrations';

/**
 * The mail provider's quota ledger (runtime contract part 3 "Quota"), shared by every instance:
 * - `mail_quota_grants`: each account's grants of the last window (server/domain/mail-quota/),
 *   taken by `mail_quota_take`, which serialises one account's grants on an advisory lock and
 *   answers, when nothing fits, how long until the oldest grants leave the window;
 * - `mail_quota_days`: the deployment's units per UTC day, method and purpose;
 * - `sync_states.quota_wait_until`: an account's bulk work waits for the daily budget until then;
 * - `mail_listing.provider_thread_id`: a listed id's thread (fetches by thread, gmail-metadata.ts).
 */
export class Migration20261201230000 extends Migration {
  override name = 'Migration20261201230000';

  override up(): void | Promise<void> {
    this.addSql(`create table "mail_quota_grants" ("id" bigserial primary key,
      "account_id" uuid not null references "accounts" ("id") on delete cascade,
      "lane" varchar(16) not null, "units" int not null, "granted_at" timestamptz not null);`);
    this.addSql(
      `create index "mail_quota_grants_account_id_granted_at_index" on "mail_quota_grants" ("account_id", "granted_at");`,
    );
    this.addSql(`create index "mail_quota_grants_granted_at_index" on "mail_quota_grants" ("granted_at");`);
    this.addSql(`create table "mail_quota_days" ("day" date not null, "method" varchar(32) not null, "purpose" varchar(16) not null,
      "units" bigint not null default 0, primary key ("day", "method", "purpose"));`);
    this.addSql(`alter table "sync_states" add column "quota_wait_until" timestamptz null;`);
    // A listed id's thread: a later call can read several pending messages of one thread at once.
    this.addSql(`alter table "mail_listing" add column "provider_thread_id" varchar(255) null;`);
    this.addSql(`create function mail_quota_take(p_account uuid, p_lane text, p_want int, p_min int, p_cap int, p_window_ms int, p_reserve int)
  returns table (granted int, wait_ms int) language plpgsql as $$
declare
  v_now timestamptz;
  v_used bigint;
  v_others bigint;
  v_cap bigint;
  v_wait double precision;
  v_window interval := make_interval(secs => p_window_ms / 1000.0);
begin
  -- A grant is a counter's increment: a crash may forget the last ones, which only lets a little more through.
  perform set_config('synchronous_commit', 'off', true);
  perform pg_advisory_xact_lock(hashtextextended('mail-quota:' || p_account::text, 0));
  v_now := clock_timestamp();
  delete from mail_quota_grants g where g.account_id = p_account and g.granted_at <= v_now - v_window;
  select coalesce(sum(g.units), 0), coalesce(sum(g.units) filter (where g.lane <> 'bulk'), 0) into v_used, v_others
    from mail_quota_grants g where g.account_id = p_account;
  -- Bulk work leaves the other lanes p_reserve units of the window, and yields what they spent past
  -- it: a user who opens more threads than the reserve holds finds room growing with their use.
  v_cap := case when p_lane = 'bulk' then greatest(0, p_cap - greatest(0, v_others - p_reserve)) else p_cap end;
  -- A call larger than the lane's share still goes into an empty window (else it could never go).
  if v_used + p_min <= v_cap or v_used = 0 then
    granted := greatest(p_min, least(p_want, v_cap - v_used));
    insert into mail_quota_grants (account_id, lane, units, granted_at) values (p_account, p_lane, granted, v_now);
    wait_ms := 0;
    return next;
    return;
  end if;
  select extract(epoch from (x.granted_at + v_window - v_now)) * 1000 into v_wait
    from (select g.granted_at, v_used - sum(g.units) over (order by g.granted_at, g.id) as left_after
            from mail_quota_grants g where g.account_id = p_account) x
   where x.left_after + p_min <= v_cap
   order by x.granted_at limit 1;
  granted := 0;
  wait_ms := greatest(1, ceil(coalesce(v_wait, p_window_ms)))::int;
  return next;
end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sync_states" drop column if exists "quota_wait_until";`);
    this.addSql(`alter table "mail_listing" drop column if exists "provider_thread_id";`);
    this.addSql(`drop function if exists mail_quota_take(uuid, text, int, int, int, int, int);`);
    this.addSql(`drop table if exists "mail_quota_grants";`);
    this.addSql(`drop table if exists "mail_quota_days";`);
  }
}
