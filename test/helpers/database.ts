/** A throw-away database per test file, cloned from the migrated template of global setup. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

function templateUrl(): URL {
  const url = process.env.MIA_TEST_TEMPLATE_URL;
  if (!url)
    throw new Error('MIA_TEST_TEMPLATE_URL is not set: run tests through `npm test` (global setup starts PostgreSQL)');
  return new URL(url);
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const url = templateUrl();
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  // Cloning needs the template idle; retry briefly if another file is cloning right now.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin((c) => c.query(`create database ${name} template mia_template`));
      break;
    } catch (err) {
      if (attempt > 20) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const url = templateUrl();
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}
