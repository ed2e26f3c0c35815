/**
 * The OpenAPI document passes the two common linters with zero errors: Redocly's
 * recommended rules and Spectral's OpenAPI ruleset (.spectral.yaml). Their warnings are
 * reported as diagnostics, not failures.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildOpenApiDocument } from '../../../server/http/openapi.ts';
import { appRouter } from '../../../server/trpc/routers/index.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');

function documentFile(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'mia-openapi-')), 'openapi.json');
  writeFileSync(file, JSON.stringify(buildOpenApiDocument(appRouter, { baseUrl: 'https://api.mail-inbox.example' })));
  return file;
}

/** No file of this repository runs in a linter: it stays out of `npm test`'s coverage (set empty: node copies a missing one). */
const lint = (bin: string, args: string[]) =>
  spawnSync(path.join(ROOT, 'node_modules/.bin', bin), args, {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NODE_V8_COVERAGE: '' },
  });

describe('/openapi.json under the linters', () => {
  it('Redocly (recommended): no errors', (t) => {
    const run = lint('redocly', ['lint', documentFile(), '--format=summary']);
    t.diagnostic(
      run.stdout
        .trim()
        .split('\n')
        .filter((l) => /warning|error/.test(l))
        .join('; '),
    );
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  });

  it('Spectral (spectral:oas): no errors', (t) => {
    const run = lint('spectral', ['lint', documentFile(), '--ruleset', '.spectral.yaml', '--fail-severity', 'error']);
    t.diagnostic(run.stdout.trim().split('\n').slice(-1)[0] ?? '');
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  });
});
