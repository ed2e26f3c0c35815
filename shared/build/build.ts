/**
 * Builds the client package into shared/dist: JavaScript (ES modules, relative imports
 * rewritten to .js) and declarations for every module of shared/, with `router.d.ts`
 * replaced by a self-contained copy of the router's type (router-dts.ts). Then it checks
 * that nothing in dist reaches the server's sources, and that the copied router gives the
 * client exactly the inputs, outputs and procedure kinds the server's router does.
 *
 *   node shared/build/build.ts        (npm run build:client; `npm pack` in shared/ runs it)
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { routerDeclaration } from './router-dts.ts';

const SHARED = path.resolve(import.meta.dirname, '..');
const ROOT = path.dirname(SHARED);
const DIST = path.join(SHARED, 'dist');
/** Where the compiler would put files (never written: emitted files are mapped into DIST). */
const VIRTUAL_OUT = path.join(ROOT, '.client-build-out');

function walk(dir: string, keep: (file: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return ['node_modules', 'dist', 'build'].includes(e.name) ? [] : walk(full, keep);
    return keep(full) ? [full] : [];
  });
}

function compilerOptions(): ts.CompilerOptions {
  const configPath = path.join(ROOT, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT, undefined, configPath);
  return {
    ...parsed.options,
    noEmit: false,
    allowImportingTsExtensions: false,
    rewriteRelativeImportExtensions: true,
    declaration: true,
    declarationMap: false,
    sourceMap: false,
    outDir: VIRTUAL_OUT,
    rootDir: ROOT,
  };
}

function report(diagnostics: readonly ts.Diagnostic[]): void {
  if (!diagnostics.length) return;
  const host: ts.FormatDiagnosticsHost = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => ROOT,
    getNewLine: () => '\n',
  };
  throw new Error(`client build failed:\n${ts.formatDiagnostics(diagnostics, host)}`);
}

/** `from './x.ts'` -> `from './x.js'` (declaration emit keeps the written specifiers). */
function jsSpecifiers(text: string): string {
  return text.replace(/((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]*?)\.ts(['"])/g, '$1$2.js$3');
}

export function buildClient(): string[] {
  const started = Date.now();
  const phases: string[] = [];
  let mark = started;
  const phase = (name: string) => {
    phases.push(`${name} ${((Date.now() - mark) / 1000).toFixed(1)} s`);
    mark = Date.now();
  };
  const options = compilerOptions();
  const sources = walk(SHARED, (f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  const host = cachingHost(ts.createCompilerHost(options));
  rmSync(DIST, { recursive: true, force: true });
  const first = ts.createProgram({ rootNames: sources, options, host });
  report(first.getOptionsDiagnostics());
  const routerFile = path.join(DIST, 'router.d.ts');
  const routerText = routerDeclaration(first, path.join(SHARED, 'router.ts'));
  phase('router types');

  // The same program (its parsed files reused) plus the generated router and a file that
  // checks it against the server's: one checker type-checks shared/, the copy, and emits.
  const checkFile = path.join(SHARED, 'build', '__router-check__.ts');
  const virtual = new Map([
    [routerFile, routerText],
    [checkFile, ROUTER_CHECK],
  ]);
  const program = ts.createProgram({
    rootNames: [...sources, checkFile],
    options,
    oldProgram: first,
    host: {
      ...host,
      fileExists: (f) => virtual.has(f) || host.fileExists(f),
      directoryExists: (d) => d === DIST || (host.directoryExists?.(d) ?? true),
      readFile: (f) => virtual.get(f) ?? host.readFile(f),
      getSourceFile: (f, lang, onError, create) =>
        virtual.has(f) ? ts.createSourceFile(f, virtual.get(f)!, lang) : host.getSourceFile(f, lang, onError, create),
    },
  });
  report([checkFile, routerFile, ...sources].flatMap((f) => program.getSemanticDiagnostics(program.getSourceFile(f))));
  phase('check');

  const written: string[] = [];
  const write: ts.WriteFileCallback = (fileName, text) => {
    const relative = path.relative(path.join(VIRTUAL_OUT, 'shared'), fileName);
    if (relative.startsWith('..')) throw new Error(`unexpected output outside shared/: ${fileName}`);
    const target = path.join(DIST, relative);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, fileName.endsWith('.d.ts') ? jsSpecifiers(text) : text);
    written.push(target);
  };
  for (const file of sources) report(program.emit(program.getSourceFile(file), write).diagnostics);
  writeFileSync(routerFile, routerText);
  phase('emit');

  for (const file of written) {
    const text = readFileSync(file, 'utf8');
    if (/\.\.\/server\/|['"][^'"]*\.ts['"]/.test(text.replace(/\/\/.*|\/\*[\s\S]*?\*\//g, ''))) {
      throw new Error(
        `${path.relative(ROOT, file)} still imports a source file: ${text.match(/[^\n]*(\.\.\/server\/|\.ts['"])[^\n]*/)?.[0]}`,
      );
    }
  }
  console.log(
    `client build: ${written.length} files in ${path.relative(ROOT, DIST)} in ${((Date.now() - started) / 1000).toFixed(1)} s (${phases.join(', ')})`,
  );
  return written;
}

/** Parses each file once for both programs (the second has other root names, so no structure reuse). */
function cachingHost(host: ts.CompilerHost): ts.CompilerHost {
  const parsed = new Map<string, ts.SourceFile | undefined>();
  return {
    ...host,
    getSourceFile: (f, lang, onError, create) => {
      if (!parsed.has(f)) parsed.set(f, host.getSourceFile(f, lang, onError, create));
      return parsed.get(f);
    },
  };
}

/** Fails to type-check unless the generated router gives a client what the server's router does. */
const ROUTER_CHECK = [
  `import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';`,
  `import type { TRPCClient } from '@trpc/client';`,
  `import type { AppRouter as Built } from '../dist/router.js';`,
  `import type { AppRouter as Server } from '../router.ts';`,
  `type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;`,
  `export const inputs: Same<inferRouterInputs<Built>, inferRouterInputs<Server>> = true;`,
  `export const outputs: Same<inferRouterOutputs<Built>, inferRouterOutputs<Server>> = true;`,
  `export const client: Same<TRPCClient<Built>, TRPCClient<Server>> = true;`,
].join('\n');

if (import.meta.main) {
  try {
    buildClient();
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  }
}
