/**
 * What the service exports, for the tests of the alert rules and the dashboard: the series
 * names a running app's GET /metrics declares (`# TYPE` lines, histograms and summaries
 * expanded to the series Prometheus stores) with the label names each may carry (from the
 * prom-client registry the app built, plus the `job`/`instance` Prometheus adds). And a
 * small reading of PromQL: the metric names an expression selects, the labels its matchers
 * name, and the labels it groups by.
 */
import assert from 'node:assert/strict';
import type { TestApp } from '../helpers/app.ts';

/** The scraper's credential: give it to the app as METRICS_TOKEN (`sharedApp({ METRICS_TOKEN })`). */
export const METRICS_TOKEN = 'test-metrics-scraper-token-0123456789';

/** Series name -> the label names it may carry. */
export type ExportedSeries = Map<string, Set<string>>;

/** Labels every scraped series gets from Prometheus. */
const TARGET_LABELS = ['job', 'instance'];
/** Series Prometheus writes for each scrape target itself (not the service's). */
const PER_TARGET = [
  'up',
  'scrape_duration_seconds',
  'scrape_samples_scraped',
  'scrape_samples_post_metric_relabeling',
  'scrape_series_added',
];

export async function exportedSeries(app: TestApp): Promise<ExportedSeries> {
  const res = await fetch(`${app.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(res.status, 200, 'GET /metrics');
  const text = await res.text();
  const labelsOf = new Map(
    app.container.metrics.registry
      .getMetricsAsArray()
      .map((m) => [m.name, (m as unknown as { labelNames?: string[] }).labelNames ?? []]),
  );
  const series: ExportedSeries = new Map(PER_TARGET.map((name) => [name, new Set(TARGET_LABELS)]));
  for (const [, family, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const labels = [...TARGET_LABELS, ...(labelsOf.get(family) ?? [])];
    const add = (name: string, ...extra: string[]) => series.set(name, new Set([...labels, ...extra]));
    if (type === 'histogram') {
      add(`${family}_bucket`, 'le');
      add(`${family}_sum`);
      add(`${family}_count`);
    } else if (type === 'summary') {
      add(family, 'quantile');
      add(`${family}_sum`);
      add(`${family}_count`);
    } else {
      add(family);
    }
  }
  assert.ok(
    [...series.keys()].some((n) => n.startsWith('mia_')),
    "GET /metrics declares the service's own metrics",
  );
  return series;
}

/** PromQL words that are not metric names (operators, modifiers, literals). Functions are told apart by their `(`. */
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'inf',
  'nan',
  'atan2',
]);

export interface PromqlReading {
  /** Metric names selected, each once. */
  names: string[];
  /** [metric, label] for each label matcher written after a metric name. */
  matchers: [string, string][];
  /** Labels named in by/without/on/ignoring/group_x clauses. */
  grouping: string[];
}

/**
 * Reads a PromQL expression (Grafana variables such as `$job` and `$__rate_interval` allowed).
 * Enough for the expressions written in deploy/: selectors with `{...}` matchers, ranges,
 * functions, aggregations and binary operators; not a parser.
 */
export function readPromql(expr: string): PromqlReading {
  const strings: string[] = [];
  let s = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, (m) => `"${strings.push(m) - 1}"`);
  s = s.replace(/\$\{\w+\}|\$\w+/g, ' ');
  const grouping: string[] = [];
  s = s.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, list: string) => {
    grouping.push(
      ...list
        .split(',')
        .map((l) => l.trim())
        .filter(Boolean),
    );
    return ' ';
  });
  const matchers: [string, string][] = [];
  s = s.replace(/([A-Za-z_:][\w:]*)?\s*\{([^}]*)\}/g, (_, name: string | undefined, body: string) => {
    const labels = [...body.matchAll(/([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1]!);
    if (name && !KEYWORDS.has(name)) for (const label of labels) matchers.push([name, label]);
    return name ? ` ${name} ` : ' ';
  });
  s = s.replace(/\[[^\]]*\]/g, ' ').replace(/"\d+"/g, ' ');
  const names = [...s.matchAll(/(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()/g)]
    .map((m) => m[1]!)
    .filter((n) => !KEYWORDS.has(n));
  return { names: [...new Set(names)], matchers, grouping };
}

/** Problems with an expression's metric names and labels against what the service exports; [] when none. */
export function checkPromql(expr: string, exported: ExportedSeries): string[] {
  const { names, matchers, grouping } = readPromql(expr);
  const problems: string[] = [];
  if (!names.length) problems.push('selects no metric');
  for (const name of names) if (!exported.has(name)) problems.push(`${name} is not exported`);
  for (const [name, label] of matchers)
    if (exported.has(name) && !exported.get(name)!.has(label)) problems.push(`${name} has no label ${label}`);
  const known = new Set(names.flatMap((n) => [...(exported.get(n) ?? [])]));
  for (const label of grouping)
    if (!known.has(label)) problems.push(`no metric of the expression has the label ${label}`);
  return problems;
}
