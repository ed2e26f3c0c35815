/**
 * docker-compose.yml, without a Docker engine (CI has none). `docker-compose config` (the
 * Debian package .ci/run installs) validates the file and resolves it; where the tool is not
 * installed (a developer's machine) the same checks run on the file as parsed, and the test's
 * name says so. Under CI=true the tool must be there.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { ROOT, readDockerfile } from './dockerfile-model.ts';

interface Service {
  image?: string;
  build?: string | { context?: string; target?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string | number | null>;
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  ports?: (string | number)[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  profiles?: string[];
  init?: boolean;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const FILE = path.join(ROOT, 'docker-compose.yml');
const raw = readFileSync(FILE, 'utf8');
const doc = parse(raw, { strict: true, uniqueKeys: true }) as ComposeFile;

const ci = process.env.CI === 'true';
const haveTool = spawnSync('docker-compose', ['version'], { encoding: 'utf8' }).status === 0;
const toolNote = haveTool ? 'with docker-compose config' : 'docker-compose not installed: structural checks only';

/** docker-compose with a clean environment and an empty env file (a developer's .env must not change the answer). */
function compose(args: string[]) {
  const dir = mkdtempSync(path.join(tmpdir(), 'mia-compose-'));
  const envFile = path.join(dir, 'empty.env');
  writeFileSync(envFile, '');
  after(() => rmSync(dir, { recursive: true, force: true }));
  return spawnSync('docker-compose', ['--env-file', envFile, '-f', FILE, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME ?? tmpdir() },
  });
}

/** The file as Compose resolves it (variables substituted, short forms expanded), or as parsed without the tool. */
function resolved(): ComposeFile {
  if (!haveTool) return doc;
  const out = compose(['config']);
  assert.equal(out.status, 0, out.stderr);
  return parse(out.stdout) as ComposeFile;
}

/** The services `docker compose [--profile p] up` starts: those without profiles, and those of an enabled profile. */
function active(file: ComposeFile, profiles: string[]): string[] {
  return Object.entries(file.services)
    .filter(([, s]) => !s.profiles?.length || s.profiles.some((p) => profiles.includes(p)))
    .map(([name]) => name)
    .sort();
}

const dependsOn = (s: Service) =>
  (Array.isArray(s.depends_on) ? Object.fromEntries(s.depends_on.map((d) => [d, {}])) : (s.depends_on ?? {})) as Record<
    string,
    { condition?: string }
  >;
const buildOf = (s: Service) => (typeof s.build === 'string' ? { context: s.build } : s.build);
const hasHealthcheck = (s: Service) => Boolean(s.healthcheck?.test) && !s.healthcheck?.disable;

/** Names the service and the demo read from the environment. */
function knownVariables(): Set<string> {
  const config = readFileSync(path.join(ROOT, 'server/infra/config.ts'), 'utf8');
  const names = new Set([...config.matchAll(/^\s+([A-Z][A-Z0-9_]+): opt\(/gm)].map((m) => m[1]));
  for (const file of readdirSync(path.join(ROOT, 'demo')).filter((f) => f.endsWith('.ts'))) {
    for (const m of readFileSync(path.join(ROOT, 'demo', file), 'utf8').matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g))
      names.add(m[1]);
  }
  return names;
}

describe('docker-compose.yml', () => {
  it(`is a valid Compose file (${toolNote})`, () => {
    if (!haveTool) {
      assert.ok(!ci, 'CI=true: docker-compose must be installed (.ci/run installs the Debian package)');
      for (const [name, s] of Object.entries(doc.services)) {
        assert.ok(s.image || s.build, `${name}: image or build`);
        for (const [dep, { condition }] of Object.entries(dependsOn(s))) {
          assert.ok(doc.services[dep], `${name} depends on an unknown service ${dep}`);
          if (condition === 'service_healthy')
            assert.ok(
              hasHealthcheck(doc.services[dep]),
              `${name} waits for ${dep} to be healthy, which has no healthcheck`,
            );
        }
        for (const v of s.volumes ?? []) {
          const source = typeof v === 'string' ? v.split(':')[0] : v.source;
          if (source && !/^[./~]/.test(source))
            assert.ok(doc.volumes && source in doc.volumes, `${name}: named volume ${source} is not declared`);
        }
        for (const value of Object.values(s.environment ?? {}))
          assert.ok(['string', 'number'].includes(typeof value) || value === null);
      }
      return;
    }
    const out = compose(['config', '-q']);
    assert.equal(out.status, 0, `docker-compose config -q:\n${out.stderr}`);
    assert.equal(compose(['--profile', 'demo', 'config', '-q']).status, 0);
  });

  it(`starts app, PostgreSQL and the Pub/Sub emulator by default, and the demo only with --profile demo (${toolNote})`, () => {
    const file = resolved();
    assert.deepEqual(active(file, []), ['app', 'postgres', 'pubsub']);
    assert.deepEqual(active(file, ['demo']), ['app', 'demo', 'postgres', 'pubsub']);
    assert.deepEqual(file.services.demo.profiles, ['demo']);
  });

  it('needs no variable set to start (the demo profile works with no account anywhere)', () => {
    // ${VAR:?message} fails every compose command of the file, --profile demo included, when VAR is unset.
    assert.doesNotMatch(raw, /\$\{[A-Z_]+:?\?/);
  });

  it('defines the app, PostgreSQL and the official Pub/Sub emulator', () => {
    assert.deepEqual(Object.keys(doc.services).sort(), ['app', 'demo', 'postgres', 'pubsub']);
    assert.match(doc.services.postgres.image!, /^postgres:\d+/);
    assert.match(doc.services.pubsub.image!, /google-cloud-cli:emulators/);
    assert.match(String(doc.services.pubsub.command), /emulators pubsub start/);
    assert.deepEqual(Object.keys(dependsOn(doc.services.app)).sort(), ['postgres', 'pubsub']);
  });

  it('runs the app from the image: no bind mount, no npm or shell at start; it waits for PostgreSQL and the emulator to be healthy', () => {
    const app = doc.services.app;
    const stages = readDockerfile().map((s) => s.name);
    assert.equal(buildOf(app)?.context, '.');
    assert.equal(buildOf(app)?.target, 'runtime');
    assert.ok(stages.includes(buildOf(app)!.target), 'the build target is a Dockerfile stage');
    assert.equal(app.command, undefined, "the image's CMD runs (node as PID 1)");
    assert.equal(app.entrypoint, undefined);
    for (const v of app.volumes ?? []) {
      const source = typeof v === 'string' ? v.split(':')[0] : v.source;
      assert.ok(
        source && !/^[./~]/.test(source) && (typeof v === 'string' || v.type !== 'bind'),
        `app: ${JSON.stringify(v)} is a bind mount`,
      );
    }
    assert.doesNotMatch(JSON.stringify(doc.services), /\bnpm\s+(ci|install|start|run)\b/);
    for (const [dep, { condition }] of Object.entries(dependsOn(app))) {
      assert.equal(condition, 'service_healthy', `app waits for ${dep} to be healthy`);
      assert.ok(hasHealthcheck(doc.services[dep]), `${dep} has a healthcheck`);
    }
    // The emulator's readiness is its HTTP port answering, not the container having started.
    assert.match(JSON.stringify(doc.services.pubsub.healthcheck!.test), /localhost:8085/);
  });

  it('gives the app the environment of the runtime contract', () => {
    const env = doc.services.app.environment as Record<string, string>;
    for (const name of [
      'PORT',
      'HOST',
      'PUBLIC_BASE_URL',
      'WEB_ORIGIN',
      'DATABASE_URL',
      'SESSION_SECRET',
      'TOKEN_ENCRYPTION_KEY',
      'GOOGLE_CLIENT_ID',
      'GOOGLE_CLIENT_SECRET',
      'PUBSUB_PROJECT_ID',
      'PUBSUB_TOPIC',
      'PUBSUB_SUBSCRIPTION',
      'PUBSUB_EMULATOR_HOST',
      'OPENAI_API_KEY',
      'OPENAI_MODEL',
      'STATUS_ADMIN_TOKEN',
    ]) {
      assert.ok(name in env, name);
    }
    assert.equal(env.HOST, '0.0.0.0');
    assert.equal(env.PUBSUB_EMULATOR_HOST, 'pubsub:8085');
    assert.match(env.DATABASE_URL, /^postgres:\/\/[^@]+@postgres:5432\//);
    assert.match(env.PUBSUB_TOPIC, /projects\/[^/]+\/topics\//);
  });

  it('uses only variable names the service and the demo read', () => {
    const known = knownVariables();
    for (const [name, s] of Object.entries(doc.services)) {
      if (!buildOf(s)) continue;
      for (const key of Object.keys(s.environment ?? {}))
        assert.ok(known.has(key), `${name}: ${key} is read by neither server/infra/config.ts nor demo/`);
    }
  });

  it('the demo profile runs the demo target on published ports equal to the ones it listens on, listening on 0.0.0.0, published on the loopback', () => {
    const demo = doc.services.demo;
    assert.equal(buildOf(demo)?.target, 'demo');
    assert.ok(readDockerfile().some((s) => s.name === 'demo'));
    assert.equal(demo.command, undefined);
    assert.equal(demo.init, true, 'an init reaps the embedded PostgreSQL that pg_ctl leaves to PID 1');
    const env = demo.environment as Record<string, string>;
    assert.equal(env.HOST, '0.0.0.0');
    const apiPort = String(env.DEMO_API_PORT ?? env.PORT);
    const webPort = String(env.DEMO_WEB_PORT);
    // The browser on the host is sent to http://localhost:<port>: the published port must be the container's.
    const published = (demo.ports ?? []).map(String);
    assert.ok(
      published.includes(`127.0.0.1:${apiPort}:${apiPort}`),
      `API ${apiPort} published as 127.0.0.1:${apiPort}:${apiPort} (${published})`,
    );
    assert.ok(
      published.includes(`127.0.0.1:${webPort}:${webPort}`),
      `web client ${webPort} published as 127.0.0.1:${webPort}:${webPort} (${published})`,
    );
    // Every published port is on the host's loopback only (the app over http, the unauthenticated emulator, the demo).
    for (const [name, svc] of Object.entries(doc.services)) {
      for (const p of svc.ports ?? [])
        assert.match(String(p), /^127\.0\.0\.1:\d+:\d+$/, `${name} publishes ${p} on the loopback only`);
    }
    // Started together with the default services: no host port used twice.
    const all = Object.values(doc.services).flatMap((s) =>
      (s.ports ?? []).map((p) => String(p).split(':').slice(-2, -1)[0]),
    );
    assert.equal(new Set(all).size, all.length, `host ports used twice: ${all}`);
  });
});
