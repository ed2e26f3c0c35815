/**
 * deploy/prometheus/alerts.yml: valid for Prometheus (`promtool check rules`), each alert
 * fired and left quiet by synthetic series (`promtool test rules` over alerts.test.yml, which
 * must hold both cases for every alert), every alert labelled and annotated for a person, and
 * every metric and label it reads one the service exports (a running app's GET /metrics).
 * promtool comes with Debian's `prometheus` package, which .ci/run installs; without it these
 * tests fail, saying so.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { sharedApp } from '../helpers/app.ts';
import { ROOT } from './dockerfile-model.ts';
import { checkPromql, exportedSeries, METRICS_TOKEN, readPromql, type ExportedSeries } from './exported-metrics.ts';

const DIR = path.join(ROOT, 'deploy/prometheus');
const RULES = path.join(DIR, 'alerts.yml');
const TESTS = path.join(DIR, 'alerts.test.yml');
const SEVERITIES = ['critical', 'warning'];

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface AlertTest {
  alertname: string;
  eval_time: string;
  exp_alerts?: { exp_labels?: Record<string, string>; exp_annotations?: Record<string, string> }[];
}

const rules = (
  parse(readFileSync(RULES, 'utf8'), { strict: true, uniqueKeys: true }) as {
    groups: { name: string; rules: Rule[] }[];
  }
).groups.flatMap((g) => g.rules);
const alerts = rules.filter((r): r is Rule & { alert: string } => Boolean(r.alert));
const unitTests = (
  parse(readFileSync(TESTS, 'utf8'), { strict: true, uniqueKeys: true }) as {
    tests: { alert_rule_test?: AlertTest[] }[];
  }
).tests.flatMap((t) => t.alert_rule_test ?? []);

function promtool(args: string[]) {
  const out = spawnSync('promtool', args, { cwd: DIR, encoding: 'utf8' });
  if (out.error && (out.error as NodeJS.ErrnoException).code === 'ENOENT') {
    assert.fail(
      "promtool is not installed: install Debian's prometheus package (apt-get install prometheus; .ci/run does)",
    );
  }
  return out;
}

describe('deploy/prometheus/alerts.yml', () => {
  it('passes promtool check rules', () => {
    const out = promtool(['check', 'rules', RULES]);
    assert.equal(out.status, 0, `promtool check rules:\n${out.stdout}${out.stderr}`);
    assert.match(out.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  it('passes promtool test rules (alerts.test.yml)', () => {
    const out = promtool(['test', 'rules', TESTS]);
    assert.equal(out.status, 0, `promtool test rules:\n${out.stdout}${out.stderr}`);
  });

  it('has, for every alert, a unit test that fires it and one that does not', () => {
    assert.ok(alerts.length >= 8, `${alerts.length} alerts`);
    for (const { alert } of alerts) {
      const cases = unitTests.filter((t) => t.alertname === alert);
      assert.ok(
        cases.some((t) => t.exp_alerts?.length),
        `${alert}: no case fires it`,
      );
      assert.ok(
        cases.some((t) => !t.exp_alerts?.length),
        `${alert}: no case where it stays quiet`,
      );
    }
    for (const t of unitTests)
      assert.ok(
        alerts.some((a) => a.alert === t.alertname),
        `alerts.test.yml tests an unknown alert ${t.alertname}`,
      );
  });

  it('gives every alert a severity, a summary, a description and a runbook hint, and a unique name', () => {
    assert.equal(new Set(alerts.map((a) => a.alert)).size, alerts.length, 'alert names are unique');
    for (const a of alerts) {
      assert.ok(
        SEVERITIES.includes(a.labels?.severity ?? ''),
        `${a.alert}: severity ${a.labels?.severity} is one of ${SEVERITIES}`,
      );
      for (const key of ['summary', 'description', 'runbook'])
        assert.ok(a.annotations?.[key]?.trim(), `${a.alert}: annotation ${key}`);
      assert.match(
        a.annotations!.runbook!,
        /docs\/operations\.md/,
        `${a.alert}: the runbook hint points at the operations doc`,
      );
      assert.ok(a.for, `${a.alert}: a for: duration (no alert on a single scrape)`);
    }
  });

  it('reads PromQL metric names, matchers and grouping labels', () => {
    const r = readPromql(
      'sum by (job, le) (rate(a_total{code=~"X|Y", job="$job"}[5m])) / on (job) max(b:c) > 7 * 3600 and d offset 1h',
    );
    assert.deepEqual(r.names, ['a_total', 'b:c', 'd']);
    assert.deepEqual(r.matchers, [
      ['a_total', 'code'],
      ['a_total', 'job'],
    ]);
    assert.deepEqual(r.grouping, ['job', 'le', 'job']);
    const exported: ExportedSeries = new Map([['a_total', new Set(['job', 'code'])]]);
    assert.deepEqual(checkPromql('sum by (provider) (rate(a_total{status="5"}[1m])) + nope', exported), [
      'nope is not exported',
      'a_total has no label status',
      'no metric of the expression has the label provider',
    ]);
  });

  describe('against a running app', () => {
    const app = sharedApp({ METRICS_TOKEN });
    let exported: ExportedSeries;
    before(async () => {
      exported = await exportedSeries(app());
    });

    it('uses only metrics and labels the service exports', () => {
      for (const r of rules) assert.deepEqual(checkPromql(r.expr, exported), [], `${r.alert ?? r.record}: ${r.expr}`);
      for (const name of [
        'mia_sync_watches_expiring_accounts',
        'mia_sync_lag_max_seconds',
        'mia_sync_dead_lettered_accounts',
        'nodejs_eventloop_lag_p99_seconds',
      ]) {
        assert.ok(
          alerts.some((a) => readPromql(a.expr).names.includes(name)),
          `an alert reads ${name}`,
        );
      }
    });
  });
});
