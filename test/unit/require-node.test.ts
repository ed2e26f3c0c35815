/**
 * `npm start` and `npm test` preload server/require-node.mjs: on a Node other than 24 they
 * stop with one line naming the version needed (Node 20 otherwise failed on a `globSync`
 * import deep inside MikroORM).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
// @ts-expect-error a plain .mjs module without declarations
import { nodeVersionProblem } from '../../server/require-node.mjs';

describe('the Node version check', () => {
  it('accepts Node 24 and names the version needed otherwise', () => {
    assert.equal(nodeVersionProblem('v24.21.0'), null);
    assert.equal(nodeVersionProblem(process.version), null, 'the suite itself runs on 24');
    for (const v of ['v20.20.2', 'v22.17.0', 'v25.0.0'])
      assert.equal(nodeVersionProblem(v), `Mail Inbox Assistant needs Node.js 24 LTS (found ${v}); see .nvmrc.`);
  });

  it('stops an older Node before anything else loads, with that one line', (t) => {
    const older = ['/usr/bin/node', '/bin/node', '/usr/local/bin/node'].find(
      (p) => existsSync(p) && !execFileSync(p, ['--version']).toString().startsWith('v24.'),
    );
    if (!older) return t.skip('no Node other than 24 on this machine');
    const run = spawnSync(older, ['--import', './server/require-node.mjs', 'server/main.ts'], { encoding: 'utf8' });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /^Mail Inbox Assistant needs Node\.js 24 LTS \(found v\d+\.\d+\.\d+\); see \.nvmrc\.\n$/);
  });
});
