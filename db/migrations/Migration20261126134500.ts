import { Migration } from '@mikro-orm/migrations';

/**
 * "Set aside" named two things: a message the provider would not return (mail_set_aside)
 * and an account whose sync job ran out of retries. The account's mark is now what it is:
 * the time its job was dead-lettered.
 */
export class Migration20261126134500 extends Migration {
  override name = 'Migration20261126134500';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sync_states" rename column "set_aside_at" to "dead_lettered_at";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sync_states" rename column "dead_lettered_at" to "set_aside_at";`);
  }
}
