/**
 * Static pages: the standalone status page (GET /status, deployable elsewhere as plain
 * files) and the rendered API reference at /docs (swagger-ui-dist, served locally so the
 * page works offline and under a strict CSP).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RouteInstaller } from './route-installer.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

function file(fullPath: string, cache = 'no-cache') {
  let body: Promise<Buffer> | undefined;
  return async (ctx: { type: string; body: unknown; set(k: string, v: string): void }) => {
    body ??= readFile(fullPath);
    ctx.type = TYPES[path.extname(fullPath)] ?? 'application/octet-stream';
    ctx.set('Cache-Control', cache);
    ctx.body = await body;
  };
}

export const staticRoutes: RouteInstaller = (routes, { limit }) => {
  const page = (name: string) => file(path.join(here, 'static', name));
  routes.get('/status', limit('global'), page('status.html'));
  routes.get('/status.js', page('status.js'));
  routes.get('/status.css', page('status.css'));
  routes.get('/docs', limit('global'), page('docs.html'));
  routes.get('/docs/init.js', page('docs-init.js'));
  routes.get('/docs/assets/swagger-ui.css', file(path.join(swaggerDir, 'swagger-ui.css'), 'public, max-age=86400'));
  routes.get(
    '/docs/assets/swagger-ui-bundle.js',
    file(path.join(swaggerDir, 'swagger-ui-bundle.js'), 'public, max-age=86400'),
  );
};
