/**
 * Serves the demo web client on its own origin (the service's WEB_ORIGIN), bundling it with
 * esbuild at start. It also relays the identity stand-in's consent page (CONSENT_PATH): the
 * stand-in listens on 127.0.0.1 only, so a browser outside a container could not reach it.
 */
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
export const CONSENT_PATH = '/oauth/consent';

export async function startWebClient(opts: { port: number; host?: string; apiBase: string; consentUrl?: string }) {
  const bundle = await build({
    entryPoints: [path.join(here, 'web', 'app.ts')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    define: { __API_BASE__: JSON.stringify(opts.apiBase) },
  });
  const js = bundle.outputFiles[0].text;
  const html = await readFile(path.join(here, 'web', 'index.html'), 'utf8');
  const css = await readFile(path.join(here, 'web', 'app.css'), 'utf8');
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (type: string, body: string) => {
      res.writeHead(200, {
        'Content-Type': type,
        'Cache-Control': 'no-store',
        'Content-Security-Policy': `default-src 'self'; connect-src 'self' ${opts.apiBase}; style-src 'self'`,
      });
      res.end(body);
    };
    if (url.pathname === CONSENT_PATH && opts.consentUrl) {
      // The stand-in consents at once and answers with a redirect back to the service's callback.
      fetch(`${opts.consentUrl}${url.search}`, { redirect: 'manual' })
        .then((answer) => {
          res.writeHead(answer.status, {
            'Cache-Control': 'no-store',
            ...(answer.headers.get('location') ? { Location: answer.headers.get('location')! } : {}),
          });
          res.end();
        })
        .catch(() => {
          res.writeHead(502, { 'Content-Type': 'text/plain; charset=utf-8' });
          res.end('The identity stand-in could not be reached.');
        });
      return;
    }
    if (url.pathname === '/app.js') return send('text/javascript; charset=utf-8', js);
    if (url.pathname === '/app.css') return send('text/css; charset=utf-8', css);
    return send('text/html; charset=utf-8', html);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', resolve);
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
