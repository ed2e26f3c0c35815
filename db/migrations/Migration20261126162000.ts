import { Migration } from '@mikro-orm/migrations';

/**
 * The purge job deletes analytics events by age (`created_at < now() - retention`, in
 * server/domain/auth/purge-expired.ts); without an index each run reads the whole table, and
 * public page views make it the largest one that grows without bound.
 */
export class Migration20261126162000 extends Migration {
  override name = 'Migration20261126162000';

  override up(): void | Promise<void> {
    this.addSql(`create index "analytics_events_created_at_index" on "analytics_events" ("created_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "analytics_events_created_at_index";`);
  }
}
