import { Migration } from '@mikro-orm/migrations';

/**
 * A resync reconciles the stored messages outside the inbox too (issue 43): the listing
 * records which of them the provider still names outside the inbox (`mail_listing.outside`);
 * those it does not name are fetched at the end, to learn whether they are gone.
 */
export class Migration20261202140000 extends Migration {
  override name = 'Migration20261202140000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "mail_listing" add column "outside" boolean not null default false;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "mail_listing" drop column if exists "outside";`);
  }
}
