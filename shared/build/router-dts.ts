/**
 * routerDeclaration(program): the declaration of `AppRouter` as a client needs it, written out
 * structurally from the server router's type: every procedure's kind, input and output, the
 * error shape, and nothing else. The server's context, its procedure meta and every server
 * module stay behind, so the file imports `@trpc/server` types only. A type it cannot write
 * as plain data (a function, a class instance, `any`) stops the build, naming where it is.
 */
import ts from 'typescript';

const TRPC_TYPES = ['TRPCBuiltRouter', 'TRPCQueryProcedure', 'TRPCMutationProcedure', 'TRPCSubscriptionProcedure'];
const PROCEDURE_TYPE: Record<string, string> = {
  query: 'TRPCQueryProcedure',
  mutation: 'TRPCMutationProcedure',
  subscription: 'TRPCSubscriptionProcedure',
};

export function routerDeclaration(program: ts.Program, routerFile: string): string {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(routerFile);
  if (!source) throw new Error(`${routerFile} is not in the program`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  const exported = moduleSymbol && checker.getExportsOfModule(moduleSymbol).find((s) => s.name === 'AppRouter');
  if (!exported) throw new Error(`${routerFile} exports no AppRouter`);
  const aliased = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const router = checker.getDeclaredTypeOfSymbol(aliased);

  const prop = (type: ts.Type, name: string, where: string): ts.Type => {
    const symbol = checker.getPropertyOfType(type, name);
    if (!symbol) throw new Error(`${where}: no property ${name}`);
    return checker.getTypeOfSymbol(symbol);
  };
  const def = prop(router, '_def', 'AppRouter');
  const rootTypes = prop(prop(def, '_config', 'AppRouter._def'), '$types', 'AppRouter._def._config');
  const record = prop(def, 'record', 'AppRouter._def');

  const printer = dataPrinter(checker);
  const transformer = printer(prop(rootTypes, 'transformer', 'root types'), 'transformer', 1);
  const errorShape = printer(prop(rootTypes, 'errorShape', 'root types'), 'errorShape', 2);

  const printRecord = (type: ts.Type, where: string, depth: number): string => {
    const pad = '  '.repeat(depth);
    const lines = checker.getPropertiesOfType(type).map((symbol) => {
      const value = checker.getTypeOfSymbol(symbol);
      const path = where ? `${where}.${symbol.name}` : symbol.name;
      const procDef = checker.getPropertyOfType(value, '_def');
      const defType = procDef && checker.getTypeOfSymbol(procDef);
      const kind = defType && checker.getPropertyOfType(defType, 'type');
      if (defType && kind) {
        const kindType = checker.getTypeOfSymbol(kind);
        const name = kindType.isStringLiteral() ? PROCEDURE_TYPE[kindType.value] : undefined;
        if (!name) throw new Error(`${path}: unknown procedure type ${checker.typeToString(kindType)}`);
        const types = prop(defType, '$types', path);
        const input = printer(prop(types, 'input', path), `${path} input`, depth + 2);
        const outputType = prop(types, 'output', path);
        const output =
          name === 'TRPCSubscriptionProcedure'
            ? streamOf(checker, printer, outputType, `${path} output`, depth + 2)
            : printer(outputType, `${path} output`, depth + 2);
        const inner = '  '.repeat(depth + 1);
        return `${doc(checker, symbol, pad)}${pad}${key(symbol.name)}: ${name}<{\n${inner}input: ${input};\n${inner}output: ${output};\n${inner}meta: object;\n${pad}}>;`;
      }
      return `${pad}${key(symbol.name)}: {\n${printRecord(value, path, depth + 1)}\n${pad}};`;
    });
    return lines.join('\n');
  };

  return [
    '/**',
    ' * The API router as the typed client sees it: generated from the server router at build',
    ' * time (shared/build/router-dts.ts). Do not edit.',
    ' */',
    `import type { ${TRPC_TYPES.join(', ')} } from '@trpc/server';`,
    '',
    'export type AppRouter = TRPCBuiltRouter<{',
    '  ctx: object;',
    '  meta: object;',
    `  errorShape: ${errorShape};`,
    `  transformer: ${transformer};`,
    '}, {',
    printRecord(record, '', 1),
    '}>;',
    '',
  ].join('\n');
}

/**
 * A subscription's output: the async iterable of its events, `AsyncIterable<T, TReturn, TNext>`
 * with T plain data (tRPC already gives a `tracked()` event as `{ id, data }`).
 */
function streamOf(
  checker: ts.TypeChecker,
  print: ReturnType<typeof dataPrinter>,
  type: ts.Type,
  where: string,
  depth: number,
): string {
  const args =
    type.flags & ts.TypeFlags.Object && (type as ts.ObjectType).objectFlags & ts.ObjectFlags.Reference
      ? checker.getTypeArguments(type as ts.TypeReference)
      : [];
  if (args.length !== 3 || !checker.typeToString(type).startsWith('AsyncIterable<'))
    throw new Error(`${where}: a subscription must return an AsyncIterable, not ${checker.typeToString(type)}`);
  const [item, done, next] = args as [ts.Type, ts.Type, ts.Type];
  const plain = (t: ts.Type, name: string) =>
    t.flags & ts.TypeFlags.Unknown ? 'unknown' : print(t, `${where} ${name}`, depth);
  return `AsyncIterable<${print(item, `${where} event`, depth)}, ${plain(done, 'return')}, ${plain(next, 'next')}>`;
}

/** The symbol's doc comment (from the server's routers or the schemas), for the consumer's editor. */
function doc(checker: ts.TypeChecker, symbol: ts.Symbol, pad: string): string {
  const text = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim().replaceAll('*/', '*\\/');
  return text ? `${pad}/** ${text.split('\n').join(`\n${pad} * `)} */\n` : '';
}

function key(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name);
}

/** Prints a type made of JSON-like data (primitives, literals, arrays, tuples, objects, records, unions). */
function dataPrinter(checker: ts.TypeChecker) {
  const print = (type: ts.Type, where: string, depth: number, seen: ts.Type[] = []): string => {
    const f = type.flags;
    if (f & ts.TypeFlags.Any) throw new Error(`${where}: the type is any`);
    if (f & ts.TypeFlags.Unknown) return 'unknown';
    if (f & ts.TypeFlags.Never) return 'never';
    if (f & ts.TypeFlags.Void) return 'void';
    if (f & ts.TypeFlags.Undefined) return 'undefined';
    if (f & ts.TypeFlags.Null) return 'null';
    if (f & ts.TypeFlags.String) return 'string';
    if (f & ts.TypeFlags.Number) return 'number';
    if (f & ts.TypeFlags.Boolean) return 'boolean';
    if (f & ts.TypeFlags.BigInt) return 'bigint';
    if (f & ts.TypeFlags.BooleanLiteral) return checker.typeToString(type);
    if (type.isStringLiteral()) return JSON.stringify(type.value);
    if (type.isNumberLiteral()) return String(type.value);
    if (seen.includes(type)) throw new Error(`${where}: a recursive type`);
    const next = [...seen, type];
    if (type.isUnion()) {
      const members = type.types.map((t) => print(t, where, depth, next));
      // `boolean` reaches a union as its two literals.
      const bools = members.includes('true') && members.includes('false');
      const rest = members.filter((m) => !bools || (m !== 'true' && m !== 'false'));
      return [...rest, ...(bools ? ['boolean'] : [])].join(' | ');
    }
    if (type.isIntersection()) return type.types.map((t) => paren(t, print(t, where, depth, next))).join(' & ');
    if (!(f & ts.TypeFlags.Object)) throw new Error(`${where}: cannot write ${checker.typeToString(type)}`);
    if (checker.isTupleType(type)) {
      return `[${checker
        .getTypeArguments(type as ts.TypeReference)
        .map((t) => print(t, where, depth, next))
        .join(', ')}]`;
    }
    if (checker.isArrayType(type)) {
      const [element] = checker.getTypeArguments(type as ts.TypeReference);
      const readonly = checker.typeToString(type).startsWith('readonly ');
      return `${readonly ? 'readonly ' : ''}${paren(element!, print(element!, `${where}[]`, depth, next))}[]`;
    }
    if (type.getCallSignatures().length || type.getConstructSignatures().length)
      throw new Error(`${where}: a function is not data`);
    if (type.getSymbol()?.valueDeclaration && ts.isClassLike(type.getSymbol()!.valueDeclaration!))
      throw new Error(`${where}: a class instance is not data`);
    const pad = '  '.repeat(depth);
    const lines: string[] = [];
    for (const info of checker.getIndexInfosOfType(type)) {
      lines.push(
        `${pad}${info.isReadonly ? 'readonly ' : ''}[key: ${checker.typeToString(info.keyType)}]: ${print(info.type, `${where}[key]`, depth + 1, next)};`,
      );
    }
    for (const symbol of checker.getPropertiesOfType(type)) {
      const optional = symbol.flags & ts.SymbolFlags.Optional ? '?' : '';
      lines.push(
        `${doc(checker, symbol, pad)}${pad}${key(symbol.name)}${optional}: ${print(checker.getTypeOfSymbol(symbol), `${where}.${symbol.name}`, depth + 1, next)};`,
      );
    }
    return lines.length ? `{\n${lines.join('\n')}\n${'  '.repeat(depth - 1)}}` : '{}';
  };
  return print;
}

/** A union or intersection inside an array or an intersection needs parentheses. */
function paren(type: ts.Type, text: string): string {
  return type.isUnionOrIntersection() ? `(${text})` : text;
}
