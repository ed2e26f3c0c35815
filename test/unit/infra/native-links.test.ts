/**
 * The embedded PostgreSQL's library links, made by the service (no install script runs):
 * every link of native/pg-symlinks.json, relative to its own directory as the package's
 * postinstall made them, existing ones left alone.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { linkEmbeddedPostgres } from '../../../server/infra/native-links.ts';

describe('linkEmbeddedPostgres', () => {
  it('makes the listed links once, relative, and leaves existing ones', async (t) => {
    const root = await mkdtemp(path.join(tmpdir(), 'mia-links-'));
    t.after(() => rm(root, { recursive: true, force: true }));
    await mkdir(path.join(root, 'native', 'lib'), { recursive: true });
    await writeFile(path.join(root, 'native', 'lib', 'libpq.so.5.18'), 'the library');
    const links = [
      { source: 'native/lib/libpq.so.5.18', target: 'native/lib/libpq.so.5' },
      { source: 'native/lib/libpq.so.5.18', target: 'native/lib/libpq.so' },
    ];
    await writeFile(path.join(root, 'native', 'pg-symlinks.json'), JSON.stringify(links));
    assert.equal(await linkEmbeddedPostgres(root), 2);
    assert.equal(await readlink(path.join(root, 'native', 'lib', 'libpq.so.5')), 'libpq.so.5.18');
    assert.equal(await readFile(path.join(root, 'native', 'lib', 'libpq.so'), 'utf8'), 'the library');
    assert.equal(await linkEmbeddedPostgres(root), 0, 'nothing to do the second time');
  });

  it('finds the installed platform package, whose links are all there once the service made them', async () => {
    await linkEmbeddedPostgres();
    assert.equal(await linkEmbeddedPostgres(), 0);
  });
});
