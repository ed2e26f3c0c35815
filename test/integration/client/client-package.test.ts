/**
 * The client package as a consumer gets it: `npm pack` of shared/ (its prepack builds
 * dist/), the tarball installed into a fresh project under the OS temp dir, compiled with
 * plain `tsc` (no server source anywhere near it, library declarations checked too) and run
 * with plain `node` against the real server. Every `@ts-expect-error` in the consumer must be
 * used (tsc fails on an unused one: that is how a collapse of the types to `any` shows),
 * and the same lines without their directives must each fail with the expected error.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../../server/infra/database.ts';
import { buildTestApp } from '../../helpers/app.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const run = promisify(execFile);

/** npm settings a child npm keeps from `npm test`'s environment (where packages come from); the rest is run-script context. */
const KEPT_NPM_CONFIG =
  /^npm_config_(registry|cache|userconfig|globalconfig|offline|prefer_offline|(https_)?proxy|noproxy|strict_ssl|cafile|ca|@[^_]+:registry|\/\/.*)$/i;

/**
 * The child's environment: no loader (tsx), no npm run-script context (prefix, workspace)
 * leaking in. `ours: false` for a child that runs no file of this repository (npm install,
 * tsc, the consumer's build): it is left out of `npm test`'s coverage, which would only slow
 * it (tsc takes 2-3 times as long under V8's coverage).
 */
function cleanEnv(ours: boolean): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (
      key === 'NODE_OPTIONS' ||
      /^npm_(lifecycle|package)_/i.test(key) ||
      (/^npm_config_/i.test(key) && !KEPT_NPM_CONFIG.test(key))
    )
      delete env[key];
  }
  // Empty, not deleted: node copies a missing NODE_V8_COVERAGE into every child's environment.
  if (!ours) env.NODE_V8_COVERAGE = '';
  return env;
}

async function sh(cmd: string, args: string[], cwd: string, ours = false): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(cmd, args, { cwd, env: cleanEnv(ours), maxBuffer: 16 << 20 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}${String(err)}` };
  }
}

/** Calls a consumer writes; each `// @ts-expect-error` line must fail, every other must compile. */
const TYPED = `
import { createClient, isApiError, isNetworkError, type ApiClient, type ClientErrorCode } from '@mail-inbox-assistant/client';
import { ERROR_CODES, type ErrorCode } from '@mail-inbox-assistant/client/errors';
import { schemas } from '@mail-inbox-assistant/client';

export async function typed(api: ApiClient) {
  const health = await api.system.health.query();
  const service: 'mail-inbox-assistant' = health.service;
  const list = await api.mail.threads.query({ limit: 20, offset: 0 });
  const total: number = list.total;
  const subject: string | undefined = list.threads[0]?.subject;
  const analysis = await api.mail.analyze.mutate({ threadId: '00000000-0000-4000-8000-000000000000' });
  const priority: 'URGENT' | 'IMPORTANT' | 'NORMAL' | 'LOW' = analysis.priority;
  const parsed: { limit: number; offset: number } = schemas.threadListInput.parse({});
  const codes: ErrorCode[] = ERROR_CODES;
  try {
    await api.mail.sync.mutate();
  } catch (err) {
    if (isApiError(err, 'RATE_LIMITED')) { const code: ErrorCode = err.code; return code; }
    if (isNetworkError(err)) { const code: 'NETWORK_ERROR' = err.code; return code; }
    if (isApiError(err)) { const code: ClientErrorCode = err.code; return code; }
  }

  // @ts-expect-error TS2551 misspelled procedure (did you mean threads?)
  await api.mail.threadz.query({ limit: 20 });
  // @ts-expect-error TS2322 limit is a number, not a numeric string
  await api.mail.threads.query({ limit: '20' });
  // @ts-expect-error TS2322 offset is a number
  await api.mail.threads.query({ offset: true });
  // @ts-expect-error TS2339 sync is a mutation: it has no .query
  await api.mail.sync.query();
  // @ts-expect-error TS2339 health is a query: it has no .mutate
  await api.system.health.mutate();
  // @ts-expect-error TS2322 tone is default | professional | friendly
  await api.mail.draft.mutate({ threadId: '00000000-0000-4000-8000-000000000000', tone: 'sarcastic' });
  // @ts-expect-error TS2322 the service is a string literal, not a number
  const notNumber: number = health.service;
  // @ts-expect-error TS2339 no such field on a thread summary
  const wrong: string = list.threads[0]!.subjectLine;
  // @ts-expect-error TS2322 NETWORK_ERROR is the client's code only, not the API's closed set
  const notApi: ErrorCode = 'NETWORK_ERROR' as ClientErrorCode;
  return { service, total, subject, priority, parsed, codes, notNumber, wrong, notApi, createClient };
}
`;

/** Run with plain node: a live server, a port nobody listens on, a server that resets the connection. */
const MAIN = `
import { ApiError, createClient, isApiError, NetworkError } from '@mail-inbox-assistant/client';
declare const process: { argv: string[] };
const [baseUrl, refusedUrl, resetUrl] = process.argv.slice(2) as [string, string, string];

const failure = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e instanceof ApiError
  ? { name: e.name, code: e.code, httpStatus: e.httpStatus, network: e instanceof NetworkError, cause: String((e as Error).cause) }
  : { unexpected: String(e) });

const api = createClient({ baseUrl });
const health = await api.system.health.query();
const signedOut = await failure(api.mail.threads.query({ limit: 5 }));
const refused = await failure(createClient({ baseUrl: refusedUrl }).system.health.query());
const refusedMutation = await failure(createClient({ baseUrl: refusedUrl }).mail.sync.mutate());
const reset = await failure(createClient({ baseUrl: resetUrl }).system.health.query());
console.log(JSON.stringify({ service: health.service, signedOut, refused, refusedMutation, reset, guard: isApiError(null) }));
`;

/** The package's declarations (and its dependencies') are checked too; only TypeScript's own libs are skipped. */
const TSCONFIG = (include: string, extra: Record<string, unknown>) =>
  JSON.stringify(
    {
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        lib: ['ES2024', 'ESNext.Disposable', 'DOM'],
        types: [],
        skipLibCheck: false,
        skipDefaultLibCheck: true,
        ...extra,
      },
      include: [include],
    },
    null,
    2,
  );

describe('the client package tarball', () => {
  it('packs built JavaScript and declarations that a fresh project compiles with tsc and runs with node', async (t) => {
    let mark = Date.now();
    const step = (name: string) => {
      t.diagnostic(`${name}: ${((Date.now() - mark) / 1000).toFixed(1)} s`);
      mark = Date.now();
    };
    const dir = await mkdtemp(path.join(tmpdir(), 'mia-client-consumer-'));
    t.after(() => rm(dir, { recursive: true, force: true }));

    // npm pack runs the package's prepack, the build (scripts are off in the project's .npmrc: asked for here).
    const pack = await sh(
      'npm',
      ['pack', '--ignore-scripts=false', '--json', '--pack-destination', dir],
      path.join(ROOT, 'shared'),
      true,
    );
    assert.equal(pack.code, 0, pack.out);
    const [packed] = JSON.parse(pack.out.slice(pack.out.indexOf('['), pack.out.lastIndexOf(']') + 1)) as [
      { filename: string; files: { path: string }[] },
    ];
    const files = packed.files.map((f) => f.path).sort();
    assert.ok(
      files.includes('dist/index.js') && files.includes('dist/index.d.ts') && files.includes('dist/router.d.ts'),
      files.join(', '),
    );
    assert.deepEqual(
      files.filter((f) => !(f === 'package.json' || (f.startsWith('dist/') && /\.(js|d\.ts)$/.test(f)))),
      [],
      'only dist/ and package.json ship',
    );
    const routerDts = await readFile(path.join(ROOT, 'shared/dist/router.d.ts'), 'utf8');
    assert.doesNotMatch(routerDts, /server\/|\bany\b/);
    step('build and pack');

    await mkdir(path.join(dir, 'app/src'), { recursive: true });
    const app = path.join(dir, 'app');
    await writeFile(
      path.join(app, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    const install = await sh(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--no-package-lock',
        path.join(dir, packed.filename),
      ],
      app,
    );
    assert.equal(install.code, 0, install.out);
    step('install the tarball');

    // Compiles with every directive used; the same lines without their directive each fail.
    await writeFile(path.join(app, 'src/typed.ts'), TYPED);
    await writeFile(path.join(app, 'src/main.ts'), MAIN);
    await writeFile(path.join(app, 'tsconfig.json'), TSCONFIG('src', { outDir: 'dist', rootDir: 'src' }));
    const marked = TYPED.split('\n').flatMap((line, i) =>
      line.includes('@ts-expect-error') ? [{ line: i + 2, code: line.match(/TS\d+/)![0] }] : [],
    );
    await mkdir(path.join(app, 'unmarked'));
    await writeFile(path.join(app, 'unmarked/typed.ts'), TYPED.replace(/\/\/ @ts-expect-error/g, '// expect'));
    await writeFile(
      path.join(app, 'tsconfig.unmarked.json'),
      TSCONFIG('unmarked', { noEmit: true, skipLibCheck: true }),
    );
    const [compiled, unmarked] = await Promise.all([
      sh(process.execPath, [TSC, '-p', 'tsconfig.json'], app),
      sh(process.execPath, [TSC, '-p', 'tsconfig.unmarked.json'], app),
    ]);
    assert.equal(compiled.code, 0, `tsc failed (TS2578 is an unused @ts-expect-error):\n${compiled.out}`);
    const errors = [...unmarked.out.matchAll(/typed\.ts\((\d+),\d+\): error (TS\d+)/g)].map((m) => ({
      line: Number(m[1]),
      code: m[2],
    }));
    assert.deepEqual(errors, marked, unmarked.out);
    step('tsc');

    // Plain node, no loader: a live server, a refused connection, a reset connection.
    const server = await buildTestApp(t);
    const refusedPort = await freePort();
    const resetter: Server = createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => resetter.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise((resolve) => resetter.close(resolve)));
    const resetPort = (resetter.address() as { port: number }).port;
    const ran = await sh(
      process.execPath,
      ['dist/main.js', server.url, `http://127.0.0.1:${refusedPort}`, `http://127.0.0.1:${resetPort}`],
      app,
    );
    assert.equal(ran.code, 0, ran.out);
    const result = JSON.parse(ran.out.trim().split('\n').at(-1)!);
    assert.equal(result.service, 'mail-inbox-assistant');
    assert.deepEqual(
      { ...result.signedOut, cause: undefined },
      { name: 'ApiError', code: 'AUTH_REQUIRED', httpStatus: 401, network: false, cause: undefined },
    );
    for (const failure of [result.refused, result.refusedMutation, result.reset]) {
      assert.deepEqual(
        { ...failure, cause: undefined },
        { name: 'NetworkError', code: 'NETWORK_ERROR', httpStatus: 0, network: true, cause: undefined },
        JSON.stringify(result),
      );
      assert.match(failure.cause, /TypeError/);
    }
    assert.equal(result.guard, false);
    step('server and node run');
  });
});
