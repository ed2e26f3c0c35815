/**
 * The layout rules of CONTRIBUTING.md, checked on every run: no import cycles, `domain/`
 * free of HTTP and tRPC (Koa, @trpc, http/, trpc/, the container), and no source file
 * past the size where it becomes two ideas.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import madge from 'madge';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Every folder of source (tests excluded: a test file may be long). */
const SOURCE_DIRS = ['server', 'shared', 'db/entities', 'stand-ins', 'demo', 'bench'];
const MAX_LINES = 250;

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

describe('code layout', () => {
  it('has no import cycles', async () => {
    const graph = await madge(['server', 'shared', 'db'].map((d) => path.join(ROOT, d)), { fileExtensions: ['ts'], tsConfig: path.join(ROOT, 'tsconfig.json'), baseDir: ROOT });
    assert.deepEqual(graph.circular(), []);
  });

  it('keeps domain/ free of Koa, tRPC, the HTTP layer and the container', async () => {
    const files = await sourceFiles('server/domain');
    assert.ok(files.length > 20, 'the domain files were found');
    const forbidden = [/from ['"]koa['"]/, /from ['"]@koa\//, /from ['"]@trpc\//, /from ['"](\.\.\/)+http\//, /from ['"](\.\.\/)+trpc\//, /from ['"](\.\.\/)+container\.ts['"]/, /from ['"](\.\.\/)+poller\//];
    const offenders: string[] = [];
    for (const file of files) {
      const text = await readFile(file, 'utf8');
      for (const rule of forbidden) if (rule.test(text)) offenders.push(`${path.relative(ROOT, file)} ${rule}`);
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
});
