import { Migration } from '@mikro-orm/migrations';

/**
 * Scheduled work no account can starve: a watch renewal that failed waits its own growing
 * delay (watch_failures, watch_retry_at) instead of taking the first slots of every run; the
 * quiet sweep takes accounts by their next sweep time (next_sweep_at), which a failing
 * account pushes back; an account whose provider has no mailbox for it (no_mailbox_at) is
 * left out until it signs in again. Notifications name the mailbox by the address the
 * provider gives it (mailbox_address, from its profile), which need not be the sign-in email.
 */
export class Migration20261126141500 extends Migration {
  override name = 'Migration20261126141500';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "sync_states" add "watch_failures" int not null default 0, add "watch_retry_at" timestamptz null, add "next_sweep_at" timestamptz null, add "no_mailbox_at" timestamptz null, add "mailbox_address" text null;`,
    );
    this.addSql(`create index "sync_states_mailbox_address_idx" on "sync_states" (lower("mailbox_address"));`);
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "sync_states" drop column "watch_failures", drop column "watch_retry_at", drop column "next_sweep_at", drop column "no_mailbox_at", drop column "mailbox_address";`,
    );
  }
}
