import { Migration } from '@mikro-orm/migrations';

export class Migration20261121232114 extends Migration {
  override name = 'Migration20261121232114';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "accounts" ("id" uuid not null default gen_random_uuid(), "sub" varchar(255) not null, "email" varchar(255) not null, "needs_reconnect" boolean not null default false, "signature" text null, "response_style" jsonb null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`alter table "accounts" add constraint "accounts_sub_unique" unique ("sub");`);

    this.addSql(
      `create table "ai_usage" ("id" uuid not null default gen_random_uuid(), "account_id" uuid not null, "operation" varchar(255) not null, "model" varchar(255) not null, "state" varchar(255) not null, "tokens" int not null, "prompt_tokens" int not null default 0, "completion_tokens" int not null default 0, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "ai_usage_account_created_idx" on "ai_usage" ("account_id", "created_at");`);

    this.addSql(
      `create table "analytics_events" ("id" bigserial primary key, "account_id" uuid null, "anonymous_id" uuid null, "name" varchar(255) not null, "properties" jsonb null, "created_at" timestamptz not null default now());`,
    );
    this.addSql(`create index "analytics_events_account_id_index" on "analytics_events" ("account_id");`);

    this.addSql(
      `create table "credentials" ("account_id" uuid not null, "key_id" varchar(255) not null, "refresh_token_enc" text not null, "access_token_enc" text null, "access_token_expires_at" timestamptz null, "scope" text not null, "updated_at" timestamptz not null default now(), primary key ("account_id"));`,
    );

    this.addSql(
      `create table "incidents" ("id" uuid not null default gen_random_uuid(), "kind" varchar(255) not null, "state" varchar(255) not null, "title" text not null, "message" text not null, "affected_components" text[] not null default '{}', "starts_at" timestamptz not null, "resolved_at" timestamptz null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "incidents_starts_at_index" on "incidents" ("starts_at");`);

    this.addSql(
      `create table "mail_threads" ("id" uuid not null default gen_random_uuid(), "account_id" uuid not null, "provider_thread_id" varchar(255) not null, "subject" text not null default '', "snippet" text not null default '', "last_message_at" timestamptz null, "is_unread" boolean not null default false, "in_inbox" boolean not null default false, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(
      `create index "mail_threads_inbox_list_idx" on "mail_threads" ("account_id", "last_message_at" desc, "id" desc) where "in_inbox";`,
    );
    this.addSql(
      `alter table "mail_threads" add constraint "mail_threads_account_provider_unique" unique ("account_id", "provider_thread_id");`,
    );

    this.addSql(
      `create table "mail_messages" ("id" uuid not null default gen_random_uuid(), "account_id" uuid not null, "thread_id" uuid not null, "provider_message_id" varchar(255) not null, "from_name" text not null default '', "from_address" text not null default '', "subject" text not null default '', "snippet" text not null default '', "sent_at" timestamptz not null, "is_unread" boolean not null default false, "in_inbox" boolean not null default false, "label_ids" text[] not null default '{}', "body_text" text null, "body_html" text null, "attachments" jsonb null, "body_fetched_at" timestamptz null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "mail_messages_thread_sent_idx" on "mail_messages" ("thread_id", "sent_at");`);
    this.addSql(
      `alter table "mail_messages" add constraint "mail_messages_account_provider_unique" unique ("account_id", "provider_message_id");`,
    );

    this.addSql(
      `create table "drafts" ("id" uuid not null default gen_random_uuid(), "account_id" uuid not null, "thread_id" uuid not null, "message_id" uuid not null, "subject" text not null, "body" text not null, "language" varchar(255) not null, "options" jsonb not null, "model" varchar(255) not null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "drafts_account_id_index" on "drafts" ("account_id");`);
    this.addSql(`create index "drafts_thread_id_index" on "drafts" ("thread_id");`);

    this.addSql(
      `create table "analyses" ("id" uuid not null default gen_random_uuid(), "account_id" uuid not null, "thread_id" uuid not null, "message_id" uuid not null, "priority" varchar(255) not null, "reply_status" varchar(255) not null, "confidence" double precision not null, "reason" text not null, "suggested_action" text not null, "model" varchar(255) not null, "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "analyses_account_id_index" on "analyses" ("account_id");`);
    this.addSql(`create index "analyses_thread_id_index" on "analyses" ("thread_id");`);
    this.addSql(`alter table "analyses" add constraint "analyses_message_id_unique" unique ("message_id");`);

    this.addSql(
      `create table "oauth_states" ("id" varchar(255) not null, "browser_hash" varchar(255) not null, "code_verifier" varchar(255) not null, "expires_at" timestamptz not null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "oauth_states_expires_at_index" on "oauth_states" ("expires_at");`);

    this.addSql(
      `create table "rate_limits" ("key" varchar(255) not null, "points" int not null default 0, "expire" bigint null, primary key ("key"));`,
    );
    this.addSql(`create index "rate_limits_expire_index" on "rate_limits" ("expire");`);

    this.addSql(
      `create table "sessions" ("id" varchar(255) not null, "account_id" uuid null, "data" jsonb not null, "expires_at" timestamptz not null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "sessions_account_id_index" on "sessions" ("account_id");`);
    this.addSql(`create index "sessions_expires_at_index" on "sessions" ("expires_at");`);

    this.addSql(
      `create table "sync_states" ("account_id" uuid not null, "history_id" bigint null, "full_sync_page_token" text null, "full_sync_active" boolean not null default false, "last_synced_at" timestamptz null, "lease_owner" varchar(255) null, "lease_until" timestamptz null, "watch_expires_at" timestamptz null, "watch_renewed_at" timestamptz null, "last_notification_at" timestamptz null, "updated_at" timestamptz not null default now(), primary key ("account_id"));`,
    );
    this.addSql(`create index "sync_states_watch_expires_idx" on "sync_states" ("watch_expires_at");`);

    this.addSql(
      `alter table "ai_usage" add constraint "ai_usage_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "analytics_events" add constraint "analytics_events_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "credentials" add constraint "credentials_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "mail_threads" add constraint "mail_threads_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "mail_messages" add constraint "mail_messages_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "mail_messages" add constraint "mail_messages_thread_id_foreign" foreign key ("thread_id") references "mail_threads" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "drafts" add constraint "drafts_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "drafts" add constraint "drafts_thread_id_foreign" foreign key ("thread_id") references "mail_threads" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "drafts" add constraint "drafts_message_id_foreign" foreign key ("message_id") references "mail_messages" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "analyses" add constraint "analyses_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "analyses" add constraint "analyses_thread_id_foreign" foreign key ("thread_id") references "mail_threads" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "analyses" add constraint "analyses_message_id_foreign" foreign key ("message_id") references "mail_messages" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "sessions" add constraint "sessions_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "sync_states" add constraint "sync_states_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );
  }
}
