import { Migration } from '@mikro-orm/migrations';

/**
 * The highest history id the account's notifications named. The provider can notify before
 * its history shows the change: a sync whose checkpoint stays below this id is tried again,
 * backing off, for a couple of minutes (server/jobs/mail-sync.job.ts).
 */
export class Migration20261126181000 extends Migration {
  override name = 'Migration20261126181000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sync_states" add "notified_history_id" bigint null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sync_states" drop column "notified_history_id";`);
  }
}
