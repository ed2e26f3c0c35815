import { Migration } from '@mikro-orm/migrations';

export class Migration20261124002142 extends Migration {
  override name = 'Migration20261124002142';

  override up(): void | Promise<void> {
    this.addSql(`alter table "accounts" add "sessions_revoked_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "accounts" drop column "sessions_revoked_at";`);
  }
}
