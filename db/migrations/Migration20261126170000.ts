import { Migration } from '@mikro-orm/migrations';

/**
 * The provider's count of inbox messages (`labels/INBOX` `messagesTotal`), read once when an
 * inbox listing begins (server/domain/mail/sync/states/inbox-estimate.ts), so that the `sync`
 * event of a backfill can say "1,240 of ~3,000" without a provider call per event or per
 * stream. Null while unknown (not read yet, or the read failed).
 */
export class Migration20261126170000 extends Migration {
  override name = 'Migration20261126170000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sync_states" add "inbox_estimate" int null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sync_states" drop column "inbox_estimate";`);
  }
}
