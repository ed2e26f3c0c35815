import { Migration } from '@mikro-orm/migrations';

/**
 * The deployment's budget of anonymous analytics events per minute, shared by every instance
 * (server/domain/analytics/anonymous-events.ts): one row per scope holding the current minute
 * and the events counted in it. A newer minute overwrites the row, so the table stays one
 * row and needs no purge.
 */
export class Migration20261202104500 extends Migration {
  override name = 'Migration20261202104500';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "analytics_budget" ("scope" varchar(32) not null primary key, "minute" bigint not null, "events" int not null);`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "analytics_budget";`);
  }
}
