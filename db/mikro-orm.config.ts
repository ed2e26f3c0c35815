/**
 * MikroORM configuration. `ormOptions(url)` is what the service uses; the default export
 * serves the MikroORM CLI (`npm run migration:create`), reading DATABASE_URL.
 */
import { defineConfig, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { fileURLToPath } from 'node:url';
import { allEntities } from './entities/index.ts';

const migrationsPath = fileURLToPath(new URL('./migrations', import.meta.url));

export function ormOptions(clientUrl: string, extra: Partial<Options> = {}): Options {
  return defineConfig({
    clientUrl,
    entities: allEntities,
    extensions: [Migrator],
    migrations: {
      path: migrationsPath,
      pathTs: migrationsPath,
      glob: '!(*.d).{js,ts}',
      transactional: true,
      snapshot: true,
      snapshotOnMigrate: false,
      silent: true,
      snapshotName: '.snapshot',
    },
    // A DB that is down must fail a request fast (503), not hang it.
    pool: { min: 0, max: 10, idleTimeoutMillis: 30_000 },
    // plan_cache_mode: the ORM sends its statements with the values written in (no
    // parameters, so no plan to cache); the only parameterised statements on this pool are
    // the named ones of server/domain/prepared-sql.ts, whose single plan (an index scan) fits
    // every account. Planned once per connection instead of on each call, as PostgreSQL
    // would otherwise keep doing for the list (the LIMIT parameter makes its generic
    // estimate look dear).
    driverOptions: {
      connectionTimeoutMillis: 3_000,
      statement_timeout: 10_000,
      query_timeout: 12_000,
      options: '-c plan_cache_mode=force_generic_plan',
    },
    debug: false,
    allowGlobalContext: false,
    ...extra,
  });
}

export default ormOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/mail_inbox_assistant');
