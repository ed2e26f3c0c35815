/**
 * A small reading of the Dockerfile for the deploy tests: stages and their instructions
 * (continuation lines joined, comments and parser directives dropped), exec-form arguments,
 * ENV, COPY and HEALTHCHECK. Enough for the instructions this repository's Dockerfile uses;
 * dockerfile-utils lints the file itself.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export interface Stage {
  image: string;
  name?: string;
  instructions: Instruction[];
}

export function readDockerfile(file = path.join(ROOT, 'Dockerfile')): Stage[] {
  return parseDockerfile(readFileSync(file, 'utf8'));
}

export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  let pending = '';
  let startLine = 0;
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith('#') || trimmed === '') return;
    if (!pending) startLine = i + 1;
    if (trimmed.endsWith('\\')) {
      pending += `${trimmed.slice(0, -1)} `;
      return;
    }
    const full = (pending + trimmed).trim();
    pending = '';
    if (!full) return;
    const [, keyword, args = ''] = /^(\S+)\s*(.*)$/s.exec(full)!;
    const instruction = { keyword: keyword.toUpperCase(), args: args.trim(), line: startLine };
    if (instruction.keyword === 'FROM') {
      const parts = instruction.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      const as = parts.findIndex((p) => p.toLowerCase() === 'as');
      stages.push({ image: parts[0], name: as >= 0 ? parts[as + 1] : undefined, instructions: [] });
      return;
    }
    if (!stages.length) throw new Error(`line ${startLine}: ${instruction.keyword} before FROM`);
    stages[stages.length - 1].instructions.push(instruction);
  });
  return stages;
}

export const ofKind = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);

/** The exec (JSON array) form of CMD/ENTRYPOINT/RUN arguments, or null for the shell form. */
export function execForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  try {
    const parsed: unknown = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? parsed : null;
  } catch {
    return null;
  }
}

/** Every ENV of a stage, later ones winning (`KEY=value ...` and the legacy `KEY value`). */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of ofKind(stage, 'ENV')) {
    const tokens: string[] = Array.from(args.match(/(?:[^\s"]+|"[^"]*")+/g) ?? [], String);
    if (!tokens.length) continue;
    if (!tokens[0].includes('=')) {
      env[tokens[0]] = tokens.slice(1).join(' ');
      continue;
    }
    for (const token of tokens) {
      const eq = token.indexOf('=');
      env[token.slice(0, eq)] = token.slice(eq + 1).replace(/^"(.*)"$/, '$1');
    }
  }
  return env;
}

export interface Copy {
  from?: string;
  sources: string[];
  dest: string;
  line: number;
}

export function copies(stage: Stage): Copy[] {
  return [...ofKind(stage, 'COPY'), ...ofKind(stage, 'ADD')].map(({ args, line }) => {
    const parts = args.split(/\s+/);
    const flags = parts.filter((p) => p.startsWith('--'));
    const paths = parts.filter((p) => !p.startsWith('--'));
    const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
    return { from, sources: paths.slice(0, -1), dest: paths[paths.length - 1], line };
  });
}

/** The stage a name or index refers to. */
export function stageNamed(stages: Stage[], ref: string): Stage | undefined {
  return stages.find((s) => s.name === ref) ?? (/^\d+$/.test(ref) ? stages[Number(ref)] : undefined);
}

/** The stages a stage is built from: itself, its FROM <stage> base and every COPY --from, transitively. */
export function stagePath(stages: Stage[], target: Stage): Stage[] {
  const seen = new Set<Stage>();
  const visit = (stage: Stage) => {
    if (seen.has(stage)) return;
    seen.add(stage);
    const base = stageNamed(stages, stage.image);
    if (base) visit(base);
    for (const c of copies(stage)) {
      const from = c.from ? stageNamed(stages, c.from) : undefined;
      if (from) visit(from);
    }
  };
  visit(target);
  return [...seen];
}

/** HEALTHCHECK's command (exec form) and options, or null for NONE. */
export function healthcheck(stage: Stage): { options: string[]; command: string[] | null; shell?: string } | null {
  const hc = ofKind(stage, 'HEALTHCHECK').at(-1);
  if (!hc || /^NONE$/i.test(hc.args)) return null;
  const m = /^((?:--\S+\s+)*)CMD\s+(.*)$/is.exec(hc.args);
  if (!m) return null;
  return { options: m[1].trim().split(/\s+/).filter(Boolean), command: execForm(m[2].trim()), shell: m[2].trim() };
}

/**
 * The files a set of entry points loads, following relative imports (static, dynamic with a
 * literal, and `new URL('./x.ts', import.meta.url)` worker files), the packages they import by
 * name (type-only imports are erased at run time and left out), and which of those some file
 * imports statically (`eager`: loaded whenever the importer is, not only when asked for).
 */
export function importClosure(entries: string[]): {
  files: string[];
  packages: Map<string, Set<string>>;
  eager: Set<string>;
} {
  const files = new Set<string>();
  const packages = new Map<string, Set<string>>();
  const eager = new Set<string>();
  const queue = entries.map((e) => path.resolve(ROOT, e));
  const patterns = [
    /^\s*(?:import|export)\s+(?!type\s)[^'";]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\bnew URL\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*,\s*import\.meta\.url\s*\)/g,
  ];
  while (queue.length) {
    const file = queue.shift()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const [i, pattern] of patterns.entries()) {
      for (const [, spec] of text.matchAll(pattern)) {
        if (spec.startsWith('.')) {
          const target = path.resolve(path.dirname(file), spec);
          if (/\.(ts|mts|js|mjs|cjs)$/.test(target) && existsSync(target)) queue.push(target);
          continue;
        }
        if (isBuiltin(spec)) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        const from = path.relative(ROOT, file);
        packages.set(name, (packages.get(name) ?? new Set()).add(from));
        if (i < 2) eager.add(name);
      }
    }
  }
  return { files: [...files].map((f) => path.relative(ROOT, f)).sort(), packages, eager };
}

/** Every file under a directory of the repository (relative paths). */
export function filesUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.relative(ROOT, path.join(d.parentPath, d.name)));
}
