/**
 * The layout rules of CONTRIBUTING.md, checked on every run: no import cycles, each folder
 * importing only from the layers below it (`domain/` free of HTTP, tRPC, background work and
 * the wiring; the benchmark free of the tests; the eval free of the stand-ins), no source
 * file past the size where it becomes two ideas, the tables with one writer written there only, and
 * tests reading accounts and sync states through the modules that own them.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import madge from 'madge';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Every folder of source (tests excluded: a test file may be long). */
const SOURCE_DIRS = ['server', 'shared', 'db/entities', 'stand-ins', 'harness', 'demo', 'bench', 'eval'];
/** The folders whose imports are checked for cycles and layers. */
const GRAPH_DIRS = ['server', 'shared', 'db', 'stand-ins', 'harness', 'demo', 'bench', 'eval'];
/** Formatted lines (Biome, 120 columns): the old cap of 250 lines of up to ~200 columns stands at up to ~355 formatted. */
const MAX_LINES = 360;

/**
 * Who imports whom: no file under `from` imports a file under any of `not` (paths from the
 * repository root, type-only imports included) nor a package named in `packages`.
 */
const LAYERS: { from: string; not: string[]; packages?: RegExp }[] = [
  {
    from: 'server/domain/',
    not: [
      'server/http/',
      'server/trpc/',
      'server/errors/',
      'server/jobs/',
      'server/intake/',
      'server/container.ts',
      'server/start-service.ts',
      'server/main.ts',
    ],
    packages: /^(koa|@koa\/|@trpc\/|trpc-to-openapi)/,
  },
  // The mail features stand side by side on the stored mailbox (mail/mail-store.ts), neither reaching into the other.
  { from: 'server/domain/mail/sync/', not: ['server/domain/mail/threads/'] },
  { from: 'server/domain/mail/threads/', not: ['server/domain/mail/sync/'] },
  {
    from: 'server/providers/',
    not: ['server/http/', 'server/trpc/', 'server/errors/', 'server/jobs/', 'server/intake/', 'server/container.ts'],
  },
  // The error classifier sits below both transports.
  { from: 'server/errors/', not: ['server/http/', 'server/trpc/'] },
  { from: 'server/trpc/', not: ['server/http/'] },
  // The leaves: configuration, database, logging, metrics.
  {
    from: 'server/infra/',
    not: [
      'server/domain/',
      'server/providers/',
      'server/errors/',
      'server/http/',
      'server/trpc/',
      'server/jobs/',
      'server/intake/',
    ],
  },
  { from: 'server/', not: ['test/', 'harness/', 'bench/', 'demo/', 'eval/'] },
  { from: 'shared/', not: ['test/', 'harness/', 'bench/', 'demo/', 'eval/'] },
  { from: 'stand-ins/', not: ['test/', 'harness/', 'bench/', 'demo/', 'eval/'] },
  { from: 'harness/', not: ['test/', 'bench/', 'demo/', 'eval/'] },
  { from: 'demo/', not: ['test/', 'harness/', 'bench/', 'eval/'] },
  { from: 'bench/', not: ['test/', 'eval/'] },
  // The eval runs the service's prompt and provider against a real endpoint: nothing of the tests' stand-ins or harness.
  { from: 'eval/', not: ['test/', 'harness/', 'bench/', 'demo/', 'stand-ins/'] },
];

/**
 * Tables with one writer: the module that owns each (SQL or the ORM's write calls naming the
 * table or its entity anywhere else in server/ fail). The accounts table's settings columns
 * are the settings service's, written through a loaded entity under a row lock, which no
 * statement names.
 */
const TABLE_OWNERS: Record<string, { entity: string; owner: string }> = {
  sessions: { entity: 'Session', owner: 'server/domain/auth/session-rows.ts' },
  oauth_states: { entity: 'OAuthState', owner: 'server/domain/auth/oauth-states.ts' },
  accounts: { entity: 'Account', owner: 'server/domain/auth/account-rows.ts' },
};

/**
 * The test files that read `accounts` or `sync_states` with SQL, and why; every other test reads
 * them through the modules that own them (`app.account()`, `app.syncState()`: CONTRIBUTING).
 */
const CHILD_PROCESS = 'the service runs as a child process: the test has its database, not its modules';
const RAW_STATE_READERS: Record<string, string> = {
  'test/integration/live/live-notifications.test.ts':
    'timestamps compared at µs precision; a lease read on its own link',
  'test/integration/live/scheduled-fairness.test.ts': 'counts over 10,000 accounts by where-clause',
  'test/integration/live/watch-renewal-scale.test.ts': 'counts over thousands of accounts by where-clause',
  'test/integration/resilience/db-restart.test.ts': CHILD_PROCESS,
  'test/integration/resilience/kill.test.ts': CHILD_PROCESS,
  'test/integration/resilience/providers.test.ts': CHILD_PROCESS,
  'test/integration/resilience/two-instances.test.ts': CHILD_PROCESS,
  'test/integration/security/review-world.ts': "every account's row, compared before and after a caller's attempts",
  'test/integration/system/prepared-sql.test.ts': 'the SQL itself is under test',
  'test/unit/tracing.test.ts': 'SQL text the tracer masks, never run',
};

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return; // a folder that does not exist (yet)
    }
    for (const e of entries) {
      const full = path.join(d, e.name);
      if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'dist') await walk(full);
      else if (e.isFile() && /\.ts$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(full);
    }
  };
  await walk(path.join(ROOT, dir));
  return out;
}

/** The packages a file imports (static, dynamic and re-exports), by the name it uses. */
function packagesOf(text: string): string[] {
  return [...text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"]([^'"./][^'"]*)['"]/g)].map((m) => m[1]!);
}

describe('code layout', () => {
  let graph: Record<string, string[]>;
  let cycles: string[][];
  before(async () => {
    const result = await madge(
      GRAPH_DIRS.map((d) => path.join(ROOT, d)),
      { fileExtensions: ['ts'], tsConfig: path.join(ROOT, 'tsconfig.json'), baseDir: ROOT },
    );
    graph = result.obj();
    cycles = result.circular();
  });

  it('has no import cycles', () => {
    for (const dir of GRAPH_DIRS)
      assert.ok(
        Object.keys(graph).some((f) => f.startsWith(`${dir}/`)),
        `${dir}/ is in the graph`,
      );
    assert.deepEqual(cycles, []);
  });

  it('imports only from the layers below', async () => {
    assert.ok(
      Object.keys(graph).filter((f) => f.startsWith('server/domain/')).length > 20,
      'the domain files were found',
    );
    assert.ok(
      Object.entries(graph).some(([f, deps]) => f.startsWith('bench/') && deps.some((d) => d.startsWith('stand-ins/'))),
      'imports across folders were resolved',
    );
    const offenders: string[] = [];
    for (const [file, imports] of Object.entries(graph)) {
      for (const layer of LAYERS) {
        if (!file.startsWith(layer.from)) continue;
        for (const target of imports)
          if (layer.not.some((n) => target.startsWith(n))) offenders.push(`${file} -> ${target}`);
        if (layer.packages) {
          const text = await readFile(path.join(ROOT, file), 'utf8');
          for (const name of packagesOf(text)) if (layer.packages.test(name)) offenders.push(`${file} -> ${name}`);
        }
      }
    }
    assert.deepEqual(offenders, []);
  });

  it(`has no source file over ${MAX_LINES} lines`, async () => {
    const long: string[] = [];
    for (const dir of SOURCE_DIRS) {
      for (const file of await sourceFiles(dir)) {
        const lines = (await readFile(file, 'utf8')).trimEnd().split('\n').length;
        if (lines > MAX_LINES) long.push(`${path.relative(ROOT, file)}: ${lines}`);
      }
    }
    assert.deepEqual(long, []);
  });

  it('keeps a feature in its folder', async () => {
    // The mail domain: its features' folders, and at its root only the store they share.
    const root = (await readdir(path.join(ROOT, 'server/domain/mail'), { withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => e.name);
    assert.deepEqual(root, ['mail-store.ts']);
    // One home for live events: the domain's.
    assert.deepEqual(await sourceFiles('server/events'), [], 'live events live in server/domain/events/');
  });

  it('writes each owned table from its one module', async () => {
    const writers = new Map<string, Set<string>>(Object.keys(TABLE_OWNERS).map((t) => [t, new Set()]));
    for (const file of await sourceFiles('server')) {
      const text = await readFile(file, 'utf8');
      for (const [table, { entity }] of Object.entries(TABLE_OWNERS)) {
        const sql = new RegExp(`\\b(insert\\s+into|update|delete\\s+from)\\s+"?${table}"?\\b`, 'i');
        const orm = new RegExp(
          `\\b(nativeUpdate|nativeDelete|upsert|upsertMany|create|insert|insertMany)\\(\\s*${entity}\\b`,
        );
        if (sql.test(text) || orm.test(text)) writers.get(table)!.add(path.relative(ROOT, file));
      }
    }
    for (const [table, { owner }] of Object.entries(TABLE_OWNERS))
      assert.deepEqual([...writers.get(table)!], [owner], `${table} is written by ${owner} only`);
  });

  it('reads accounts and sync states in tests through their modules', async () => {
    // A statement (a string starting with select) whose table is one of the two.
    const read = /[`'"]\s*select\b[^`'"]*?\bfrom\s+"?(accounts|sync_states)\b/i;
    const readers: string[] = [];
    for (const file of await sourceFiles('test')) if (read.test(await readFile(file, 'utf8'))) readers.push(file);
    assert.deepEqual(
      readers.map((f) => path.relative(ROOT, f)).sort(),
      Object.keys(RAW_STATE_READERS).sort(),
      'a test reads accounts through app.account() and sync states through app.syncState(); ' +
        'RAW_STATE_READERS lists the files that cannot, and why',
    );
  });
});
