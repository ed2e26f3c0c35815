/**
 * deploy/grafana/mail-inbox-assistant.json: a dashboard Grafana imports as it is (its data
 * source a variable, panels laid out without overlap, unique ids), whose every query reads
 * metrics and labels the service exports (a running app's GET /metrics), and which shows
 * every metric of the service's own (`mia_*`).
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sharedApp } from '../helpers/app.ts';
import { ROOT } from './dockerfile-model.ts';
import { checkPromql, exportedSeries, METRICS_TOKEN, readPromql, type ExportedSeries } from './exported-metrics.ts';

interface Target {
  expr?: string;
  refId?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
}

const FILE = path.join(ROOT, 'deploy/grafana/mail-inbox-assistant.json');
const dashboard = JSON.parse(readFileSync(FILE, 'utf8')) as {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
};
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queried = panels.filter((p) => p.type !== 'row');
const exprs = queried.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr ?? '' })));
/** `label_values(metric, label)` of the query variables. */
const labelValues = dashboard.templating.list
  .filter((v) => v.type === 'query')
  .map((v) => {
    const query = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
    const m = /^label_values\((.+),\s*(\w+)\)$/.exec(query.trim());
    assert.ok(m, `variable ${v.name}: label_values(metric, label), not ${query}`);
    return { variable: v.name, metric: m[1]!, label: m[2]! };
  });

describe('deploy/grafana/mail-inbox-assistant.json', () => {
  it('imports as it is: a uid, the Prometheus data source as a variable, unique panel ids, no overlapping panels', () => {
    assert.equal(dashboard.uid, 'mail-inbox-assistant');
    assert.ok(
      dashboard.templating.list.some(
        (v) => v.name === 'datasource' && v.type === 'datasource' && v.query === 'prometheus',
      ),
    );
    assert.equal(new Set(panels.map((p) => p.id)).size, panels.length, 'panel ids are unique');
    const cells = new Set<string>();
    for (const p of panels) {
      const { h, w, x, y } = p.gridPos;
      assert.ok(x >= 0 && w > 0 && x + w <= 24 && h > 0 && y >= 0, `${p.title}: gridPos within 24 columns`);
      for (let i = x; i < x + w; i++)
        for (let j = y; j < y + h; j++) {
          assert.ok(!cells.has(`${i},${j}`), `${p.title} overlaps another panel at ${i},${j}`);
          cells.add(`${i},${j}`);
        }
    }
    for (const p of queried) {
      assert.ok(p.targets?.length, `${p.title}: has queries`);
      for (const t of [p.datasource, ...p.targets!.map((t) => t.datasource)])
        assert.deepEqual(t, { type: 'prometheus', uid: '${datasource}' }, `${p.title}: data source`);
      assert.equal(new Set(p.targets!.map((t) => t.refId)).size, p.targets!.length, `${p.title}: unique refIds`);
    }
  });

  it('shows request rate, latency and 5xx, sync lag, backlog, queues, set-aside, watches, providers, event loop and memory', () => {
    const read = exprs.flatMap(({ expr }) => readPromql(expr).names);
    for (const name of [
      'mia_http_request_duration_seconds_count',
      'mia_http_request_duration_seconds_bucket',
      'mia_sync_lag_max_seconds',
      'mia_sync_backlog_accounts',
      'mia_jobs_queued',
      'mia_sync_dead_lettered_accounts',
      'mia_sync_watches_expiring_accounts',
      'mia_provider_errors_total',
      'nodejs_eventloop_lag_p99_seconds',
      'process_resident_memory_bytes',
    ]) {
      assert.ok(read.includes(name), `a panel reads ${name}`);
    }
    assert.ok(
      exprs.some(({ expr }) => /status=~"5\.\."/.test(expr)),
      'a panel shows the 5xx',
    );
  });

  describe('against a running app', () => {
    const app = sharedApp({ METRICS_TOKEN });
    let exported: ExportedSeries;
    before(async () => {
      exported = await exportedSeries(app());
    });

    it('queries only metrics and labels the service exports', () => {
      for (const { panel, expr } of exprs) assert.deepEqual(checkPromql(expr, exported), [], `${panel}: ${expr}`);
      for (const { variable, metric, label } of labelValues) {
        assert.deepEqual(checkPromql(metric, exported), [], `variable ${variable}: ${metric}`);
        for (const name of readPromql(metric).names)
          assert.ok(exported.get(name)!.has(label), `variable ${variable}: ${name} has no label ${label}`);
      }
    });

    it("shows every metric of the service's own", () => {
      const read = new Set(
        exprs.flatMap(({ expr }) => readPromql(expr).names).map((n) => n.replace(/_(bucket|sum|count)$/, '')),
      );
      const own = [...exported.keys()]
        .filter((n) => n.startsWith('mia_'))
        .map((n) => n.replace(/_(bucket|sum|count)$/, ''));
      for (const name of new Set(own)) assert.ok(read.has(name), `no panel reads ${name}`);
    });
  });
});
