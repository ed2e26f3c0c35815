import { Migration } from '@mikro-orm/migrations';

/**
 * Which sanitiser made each stored body (body_sanitizer, SANITIZER_VERSION in
 * server/providers/mail/message-body.ts), written with every body. Bodies stored before the
 * column existed get 0, older than any version: the next open of their thread fetches and
 * sanitises them again, so a body cached before a sanitiser change (remote images made
 * unloadable, relative sources dropped) is never served as it was.
 */
export class Migration20261126160000 extends Migration {
  override name = 'Migration20261126160000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "mail_messages" add "body_sanitizer" int null;`);
    this.addSql(`update "mail_messages" set "body_sanitizer" = 0 where "body_fetched_at" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "mail_messages" drop column "body_sanitizer";`);
  }
}
