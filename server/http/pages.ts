/**
 * GET /health (JSON probe, 503 with the full body when the database is down) and GET /
 * (the same live status as HTML). Both call the one health check.
 */
import type Koa from 'koa';
import { DEFAULT_RETRY_AFTER } from '../domain/errors.ts';
import type { HealthReport } from '../domain/health/health.service.ts';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function healthStatusCode(report: HealthReport): number {
  return report.database === 'down' ? 503 : 200;
}

export function renderHomePage(report: HealthReport, statusPageUrl: string): string {
  const rows: [string, string, string][] = [
    [
      'Database',
      report.database === 'ok' ? 'operational' : 'down',
      report.database === 'ok' ? 'reachable' : 'unreachable',
    ],
    ['Mail provider', report.mail.state, report.mail.detail],
    ['AI provider', report.ai.state, report.ai.detail],
  ];
  const headline = { ok: 'All systems operational', degraded: 'Some components are degraded', down: 'Service is down' }[
    report.status
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="30">
<title>Mail Inbox Assistant — ${escapeHtml(headline)}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.5rem}.overall{padding:.75rem 1rem;border-radius:.5rem;font-weight:600}
.ok{background:#e6f4ea}.degraded{background:#fff4e5}.down{background:#fde7e9}
table{width:100%;border-collapse:collapse;margin:1rem 0}td,th{text-align:left;padding:.5rem;border-bottom:1px solid #ddd}
.state-operational{color:#137333}.state-degraded{color:#b06000}.state-down{color:#c5221f}.state-not_configured{color:#5f6368}
</style>
</head>
<body>
<h1>Mail Inbox Assistant</h1>
<p class="overall ${report.status}" data-status="${report.status}">${escapeHtml(headline)}</p>
<table>
<thead><tr><th>Component</th><th>State</th><th>Detail</th></tr></thead>
<tbody>
${rows.map(([name, state, detail]) => `<tr data-component="${escapeHtml(name)}"><td>${escapeHtml(name)}</td><td class="state-${escapeHtml(state)}">${escapeHtml(state)}</td><td>${escapeHtml(detail)}</td></tr>`).join('\n')}
</tbody>
</table>
<p>Checked at <time datetime="${report.time}">${report.time}</time>. This page refreshes every 30 seconds.</p>
<p><a href="${escapeHtml(statusPageUrl)}">Status page with incident history</a> · <a href="/health">/health</a> · <a href="/docs">API reference</a></p>
</body>
</html>
`;
}

export function healthRoute(check: () => Promise<HealthReport>): Koa.Middleware {
  return async (ctx) => {
    const report = await check();
    ctx.status = healthStatusCode(report);
    if (ctx.status === 503) ctx.set('Retry-After', String(DEFAULT_RETRY_AFTER[503]));
    ctx.set('Cache-Control', 'no-store');
    ctx.body = report;
  };
}

export function homeRoute(check: () => Promise<HealthReport>, statusPageUrl: string): Koa.Middleware {
  return async (ctx) => {
    const report = await check();
    ctx.status = 200;
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = renderHomePage(report, statusPageUrl);
  };
}
