/**
 * docs/spec-map.md, checked on every run: each rule of the API specification and the runtime
 * contract has one row naming the file that implements it and the test that proves it, so a
 * newcomer finds any rule in two files without a search (issue 46). The map fails here when a
 * path in it no longer exists, a test path is not a test file, a row names more than three
 * files, or its sections are missing, repeated or out of order; and, when the specification
 * sits beside the checkout (`../shared/spec/`, as in CI; `SPEC_DIR` points elsewhere), when a
 * `##` or `###` heading of either document has no row or a row names a heading it no longer
 * has. The documents' `#` titles are not sections: each document is one table of the map.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const MAP = 'docs/spec-map.md';
const SPEC_DIR = path.resolve(ROOT, process.env.SPEC_DIR || '../shared/spec');
/** Each document of the specification: the letter its rows' ids start with, its file name. */
const DOCUMENTS = [
  { letter: 'A', file: 'api-spec.md' },
  { letter: 'R', file: 'runtime-contract.md' },
] as const;
const ROW_HEADER = ['ID', 'Section', 'Rule', 'Implementation', 'Test', 'Spread'];
/** Implementation and tests together: what a newcomer opens for one rule. */
const MAX_FILES_PER_ROW = 3;
/** Issue 46's goal for the ten-rule trial: at most two files a rule on average, none over three. */
const TRIAL_AVERAGE = 2;

interface Table {
  /** The `##` heading of the map the table stands under. */
  heading: string;
  header: string[];
  rows: string[][];
}

interface Row {
  id: string;
  letter: string;
  /** The section the row belongs to (its own Section cell, or the last one above it). */
  section: string;
  /** Whether the row's Section cell names the section (the section's first row). */
  opens: boolean;
  implementation: string[];
  tests: string[];
  /** The Test cell says `none`: no test proves the rule. */
  untested: boolean;
  spread: string[];
}

/** A table row's cells: split on `|` outside backticks (and not escaped), trimmed. */
function cells(line: string): string[] {
  const out: string[] = [];
  let cell = '';
  let code = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '\\' && line[i + 1] === '|') {
      cell += '|';
      i++;
    } else if (c === '`') {
      code = !code;
      cell += c;
    } else if (c === '|' && !code) {
      out.push(cell.trim());
      cell = '';
    } else cell += c;
  }
  out.push(cell.trim());
  // The text before the first pipe and after the last one is not a cell.
  return out.slice(1, -1);
}

/** Every table of a Markdown text, with the `##` heading it stands under. */
function tables(markdown: string): Table[] {
  const out: Table[] = [];
  let heading = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    const h = /^## (.+)$/.exec(line);
    if (h) heading = h[1]!.trim();
    if (!line.startsWith('|') || !/^\|(\s*:?-+:?\s*\|)+$/.test(lines[i + 1]?.trim() ?? '')) continue;
    const table: Table = { heading, header: cells(line), rows: [] };
    for (i += 2; i < lines.length && lines[i]!.trim().startsWith('|'); i++) table.rows.push(cells(lines[i]!.trim()));
    i--;
    out.push(table);
  }
  return out;
}

/** The text of the map's `##` section named `heading`, up to the next `##` heading. */
function sectionText(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `${MAP} has a section "${heading}"`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** The backticked parts of a cell. */
const codeSpans = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

const isFile = (p: string) => existsSync(path.join(ROOT, p)) && statSync(path.join(ROOT, p)).isFile();
const isTestFile = (p: string) => p.startsWith('test/') && /\.test\.ts$/.test(p) && isFile(p);

/**
 * A section label's place: `4a. Rules …` is part 4a; `2 › Message` a `###` heading of part 2.
 * Parts order by number, then letter (4 < 4a < 4b < 5).
 */
function placeOf(label: string): { part: string; rank: [number, string]; sub: boolean } | undefined {
  const top = /^(\d+)([a-z]?)\. \S/.exec(label);
  if (top) return { part: `${top[1]}${top[2]}`, rank: [Number(top[1]), top[2]!], sub: false };
  const sub = /^(\d+)([a-z]?) › \S/.exec(label);
  if (sub) return { part: `${sub[1]}${sub[2]}`, rank: [Number(sub[1]), sub[2]!], sub: true };
  return undefined;
}

/**
 * A specification document's sections as the map labels them: each `##` heading as it stands,
 * each `###` heading after its part's number (`2 › Message`). Headings in code blocks are not.
 */
function specSections(markdown: string): string[] {
  const out: string[] = [];
  let part: string | undefined;
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const h = /^(#{2,3})\s+(.+?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const text = h[2]!;
    if (h[1] === '##') {
      part = /^(\d+[a-z]?)\./.exec(text)?.[1];
      out.push(text);
    } else {
      assert.ok(part, `"### ${text}" stands under a numbered "##" heading`);
      out.push(`${part} › ${text}`);
    }
  }
  return out;
}

const markdown = readFileSync(path.join(ROOT, MAP), 'utf8');
const all = tables(markdown);

/** The rows of the two map tables, each under the heading that names its document. */
function mapRows(): Row[] {
  const rows: Row[] = [];
  for (const { letter, file } of DOCUMENTS) {
    const found = all.filter((t) => t.heading.includes(`\`${file}\``));
    assert.equal(found.length, 1, `${MAP} has one table under a heading naming \`${file}\``);
    const [table] = found as [Table];
    assert.deepEqual(table.header, ROW_HEADER, `the ${file} table's columns`);
    assert.ok(table.rows.length > 0, `the ${file} table has rows`);
    let section = '';
    for (const r of table.rows) {
      assert.equal(
        r.length,
        ROW_HEADER.length,
        `a row of the ${file} table has ${ROW_HEADER.length} cells: | ${r.join(' | ')} |`,
      );
      const [id, sectionCell, rule, implementation, test, spread] = r as [
        string,
        string,
        string,
        string,
        string,
        string,
      ];
      assert.ok(rule, `${id}: states its rule`);
      if (sectionCell) section = sectionCell;
      assert.ok(section, `${id}: the ${file} table's first row names its section`);
      rows.push({
        id,
        letter,
        section,
        opens: sectionCell !== '',
        implementation: codeSpans(implementation),
        tests: codeSpans(test),
        untested: test === 'none',
        spread: codeSpans(spread),
      });
    }
  }
  return rows;
}

describe('docs/spec-map.md', () => {
  const rows = mapRows();
  const byId = new Map(rows.map((r) => [r.id, r]));

  it('names only paths that exist', () => {
    const missing: string[] = [];
    for (const r of rows) {
      for (const p of [...r.implementation, ...r.tests, ...r.spread])
        if (!existsSync(path.join(ROOT, p))) missing.push(`${r.id}: ${p}`);
    }
    // Elsewhere on the page (the lists, the trial, the prose), anything backticked that starts with a folder of the repository.
    const folders = new Set(
      readdirSync(ROOT, { withFileTypes: true })
        .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules')
        .map((e) => e.name),
    );
    for (const span of codeSpans(markdown)) {
      if (span.includes('/') && folders.has(span.split('/')[0]!) && !existsSync(path.join(ROOT, span)))
        missing.push(span);
    }
    assert.deepEqual(missing, [], 'paths the map names that are not in the repository');
  });

  it('gives each rule one implementation file and the test files that prove it, three files at most', () => {
    const problems: string[] = [];
    for (const r of rows) {
      if (r.implementation.length !== 1)
        problems.push(`${r.id}: names ${r.implementation.length} implementation files, not one`);
      for (const p of r.implementation)
        if (!isFile(p) || isTestFile(p)) problems.push(`${r.id}: implementation ${p} is not a source file`);
      if (r.untested) {
        if (r.tests.length) problems.push(`${r.id}: says none and names a test`);
      } else if (!r.tests.length) problems.push(`${r.id}: names no test (write none when no test proves it)`);
      for (const p of r.tests)
        if (!isTestFile(p)) problems.push(`${r.id}: test ${p} is not a test file (test/**/*.test.ts)`);
      if (r.implementation.length + r.tests.length > MAX_FILES_PER_ROW)
        problems.push(`${r.id}: ${r.implementation.length + r.tests.length} files, more than ${MAX_FILES_PER_ROW}`);
      for (const p of r.spread)
        if ([...r.implementation, ...r.tests].includes(p)) problems.push(`${r.id}: spread repeats ${p}`);
    }
    assert.deepEqual(problems, []);
  });

  it("lists each section once, in the documents' order, and numbers its rows by part", () => {
    const problems: string[] = [];
    for (const { letter, file } of DOCUMENTS) {
      const own = rows.filter((r) => r.letter === letter);
      const labels = own.filter((r) => r.opens).map((r) => r.section);
      const repeated = labels.filter((l, i) => labels.indexOf(l) !== i);
      if (repeated.length) problems.push(`${file}: sections listed twice: ${repeated.join('; ')}`);
      let previous: { part: string; rank: [number, string] } | undefined;
      for (const label of labels) {
        const place = placeOf(label);
        if (!place) {
          problems.push(`${file}: "${label}" is neither "N. Title" nor "N › Title"`);
          continue;
        }
        if (place.sub) {
          // A `###` section follows its own part's heading (or a sibling of it).
          if (previous?.part !== place.part) problems.push(`${file}: "${label}" does not follow part ${place.part}`);
        } else if (
          previous &&
          (place.rank[0] < previous.rank[0] ||
            (place.rank[0] === previous.rank[0] && place.rank[1] <= previous.rank[1]))
        ) {
          problems.push(`${file}: "${label}" comes after part ${previous.part}`);
        }
        if (!place.sub) previous = place;
      }
      // Ids: the document's letter, the row's part, its place in the part (A7.8, R4a.3).
      const counters = new Map<string, number>();
      for (const r of own) {
        const part = placeOf(r.section)?.part;
        const k = (counters.get(part ?? '') ?? 0) + 1;
        counters.set(part ?? '', k);
        if (r.id !== `${letter}${part}.${k}`) problems.push(`${file}: row ${r.id} should be ${letter}${part}.${k}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('has a row for every section heading of the specification, when it is beside the checkout', (t) => {
    for (const { letter, file } of DOCUMENTS) {
      const spec = path.join(SPEC_DIR, file);
      // The documents live outside the repository (a clone has none): check them only where they are.
      if (!existsSync(spec)) {
        t.diagnostic(
          `${spec} not found: the map's sections of ${file} are not compared with the document (CI has it in ../shared/spec/; SPEC_DIR points elsewhere)`,
        );
        continue;
      }
      const expected = specSections(readFileSync(spec, 'utf8'));
      assert.ok(expected.length > 0, `${spec} has section headings`);
      const mapped = rows.filter((r) => r.letter === letter && r.opens).map((r) => r.section);
      const missing = expected.filter((s) => !mapped.includes(s));
      const stale = mapped.filter((s) => !expected.includes(s));
      assert.deepEqual(
        { missing, stale },
        { missing: [], stale: [] },
        `${file}: sections without a row (missing) and rows of sections it no longer has (stale)`,
      );
      assert.deepEqual(mapped, expected, `${file}: the map's sections in the document's order`);
      t.diagnostic(`${file}: ${expected.length} sections, all mapped (${spec})`);
    }
  });

  it('lists exactly the rules spread over more than two files, with their files', () => {
    const table = all.find((tb) => tb.heading === 'Rules spread over more than two files');
    assert.ok(table, 'the section has a table');
    assert.deepEqual(table.header, ['Row', 'Files']);
    const listed = new Map(table.rows.map(([id, files]) => [id!, codeSpans(files!)]));
    const expected = new Map(
      rows
        .filter((r) => r.implementation.length + r.spread.length > 2)
        .map((r) => [r.id, [...r.implementation, ...r.spread]]),
    );
    assert.deepEqual(listed, expected);
  });

  it("reports the ten-rule trial from the rows, within issue 46's goal", () => {
    const table = all.find((tb) => tb.heading === 'Ten-rule trial');
    assert.ok(table, 'the trial has a table');
    assert.deepEqual(table.header, ['Rule', 'Row', 'Files via the map', 'Via the map', 'With spread']);
    assert.equal(table.rows.length, 10, 'ten rules');
    const via: number[] = [];
    const spread: number[] = [];
    for (const [rule, id, files, viaCount, spreadCount] of table.rows as [string, string, string, string, string][]) {
      const row = byId.get(id);
      assert.ok(row, `${rule}: row ${id} is in the map`);
      assert.deepEqual(codeSpans(files), [...row.implementation, ...row.tests], `${rule}: the files of row ${id}`);
      via.push(row.implementation.length + row.tests.length);
      spread.push(row.implementation.length + row.tests.length + row.spread.length);
      assert.equal(Number(viaCount), via.at(-1), `${rule}: files via the map`);
      assert.equal(Number(spreadCount), spread.at(-1), `${rule}: files with spread`);
    }
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const text = sectionText(markdown, 'Ten-rule trial');
    const summary = (what: string) => {
      const m = new RegExp(`${what}:\\s+(\\d+)\\s+files[^,]*,\\s+average\\s+([\\d.]+),\\s+max\\s+(\\d+)`).exec(text);
      assert.ok(m, `the trial states "${what}: N files …, average X, max Y"`);
      return { files: Number(m[1]), average: Number(m[2]), max: Number(m[3]) };
    };
    const figures = (xs: number[]) => ({
      files: sum(xs),
      average: Math.round((sum(xs) / xs.length) * 10) / 10,
      max: Math.max(...xs),
    });
    assert.deepEqual(summary('Via the map'), figures(via));
    assert.deepEqual(summary('With spread'), figures(spread));
    assert.ok(sum(via) / via.length <= TRIAL_AVERAGE, `at most ${TRIAL_AVERAGE} files a rule on average via the map`);
    assert.ok(Math.max(...via) <= MAX_FILES_PER_ROW, `no rule over ${MAX_FILES_PER_ROW} files via the map`);
  });
});
