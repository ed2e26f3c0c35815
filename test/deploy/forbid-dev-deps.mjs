// Preloaded (node --import) by test/deploy/runtime-command.test.ts in front of the runtime
// image's CMD: every package the process resolves must be one that the image's
// `npm ci --omit=dev --omit=optional` installs. A package the lock file marks dev-only or
// optional (or does not list) is answered as not found, as it would be in the image, and
// named on stderr.
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = process.cwd();
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));

registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    if (!result.url.startsWith('file:')) return result;
    const rel = path.relative(root, fileURLToPath(result.url)).split(path.sep).join('/');
    const dir = /^(?:node_modules\/(?:@[^/]+\/)?[^/]+\/)+/.exec(rel)?.[0].slice(0, -1);
    if (!dir) return result;
    const entry = lock.packages[dir];
    if (entry && !entry.dev && !entry.optional && !entry.devOptional) return result;
    const why = !entry
      ? 'not in package-lock.json'
      : entry.dev
        ? 'dev-only in package-lock.json'
        : 'optional in package-lock.json';
    process.stderr.write(
      `[forbid-dev-deps] ${dir} (${why}) resolved for '${specifier}' from ${context.parentURL ?? '?'}\n`,
    );
    const err = new Error(
      `Cannot find package '${specifier}' (${dir} is ${why}: npm ci --omit=dev --omit=optional does not install it)`,
    );
    err.code = context.conditions?.includes('require') ? 'MODULE_NOT_FOUND' : 'ERR_MODULE_NOT_FOUND';
    throw err;
  },
});
