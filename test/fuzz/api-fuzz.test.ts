/**
 * Hostile-input fuzzing of every REST route and the /trpc endpoint, with
 * fast-check: inputs generated from each procedure's own Zod schema (valid, near-valid and
 * mutated), plus hand-made hostile values (wrong types, huge strings and arrays, deep
 * nesting, unicode, NUL bytes, prototype keys, numbers at and past every bound, malformed
 * JSON and content types, duplicated query keys, bad UUIDs, forged and expired cookies),
 * sent anonymously and signed in (CSRF token and Origin set, or deliberately wrong).
 *
 * Every response must be a success, an allowed redirect, or the spec's envelope with a code
 * of the closed set: never a 500, a stack trace or an echoed input value. On top, the
 * security properties that must hold for any input: no session -> no success on an
 * authenticated route; a CSRF-required route never succeeds without the right token and
 * Origin; another account's thread id never succeeds; the incident writes never succeed
 * without the admin credential. Finally the app's logs hold no marker, no INTERNAL_ERROR.
 *
 * FUZZ_SEED=<n> replays a run (the seed is printed as a test diagnostic).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { ANALYTICS_EVENTS } from '../../shared/schemas/analytics.ts';
import { ADMIN_TOKEN, WEB_ORIGIN } from '../helpers/app.ts';
import {
  checkResponse,
  CONTENT_TYPES,
  FORGED_COOKIES,
  hostileString,
  hostileValue,
  inputSchemas,
  markersIn,
  markerArb,
  malformedJson,
  mutated,
  arbFromSchema,
  pctEncode,
  trpcErrorObjects,
  toJson,
  RawJson,
  uuidArb,
  withOwnKey,
  type Outcome,
  type SentRequest,
} from './fuzz-kit.ts';
import {
  operations,
  SPEC_PROCEDURES,
  STREAMING_PROCEDURES,
  startFuzzWorld,
  type FuzzWorld,
  type Lane,
  type Operation,
} from './fuzz-world.ts';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const OPS = operations();

// ------------------------------------------------------------------ request plans

type AuthMode = 'lane' | 'other-lane' | 'anon' | 'forged' | 'dead';
type CsrfMode = 'right' | 'missing' | 'wrong' | 'other-lane' | 'huge';
type OriginMode = 'right' | 'missing' | 'evil' | 'null' | 'slash' | 'upper' | 'port';
type AdminMode = 'right' | 'missing' | 'wrong';

interface Common {
  auth: AuthMode;
  csrf: CsrfMode;
  origin: OriginMode;
  admin: AdminMode;
  forged: string;
  pick: number;
  xff: 'fresh' | string;
  extra: Record<string, string>;
}

interface Plan extends Common {
  op?: Operation;
  method: string;
  /** Path and query, before the base URL. */
  target: string;
  contentType?: string;
  encoding?: string;
  body?: string | Uint8Array;
  /** The thread id the request names, if any (single calls). */
  threadId?: string;
  /** For a tRPC batch: the procedure and thread id of each call, in order. */
  batch?: { op?: Operation; threadId?: string }[];
  /** The body's text before encoding (gzip), for the markers it carries. */
  source?: string;
  label: string;
}

const commonArb = (signedIn: boolean): fc.Arbitrary<Common> =>
  fc.record({
    auth: signedIn
      ? fc.oneof(
          { weight: 10, arbitrary: fc.constant<AuthMode>('lane') },
          fc.constantFrom<AuthMode>('other-lane', 'anon', 'forged', 'dead'),
        )
      : fc.oneof(
          { weight: 4, arbitrary: fc.constant<AuthMode>('anon') },
          { weight: 2, arbitrary: fc.constant<AuthMode>('forged') },
          { weight: 1, arbitrary: fc.constant<AuthMode>('dead') },
        ),
    csrf: fc.oneof(
      { weight: 10, arbitrary: fc.constant<CsrfMode>('right') },
      fc.constantFrom<CsrfMode>('missing', 'wrong', 'other-lane', 'huge'),
    ),
    origin: fc.oneof(
      { weight: 12, arbitrary: fc.constant<OriginMode>('right') },
      fc.constantFrom<OriginMode>('missing', 'evil', 'null', 'slash', 'upper', 'port'),
    ),
    admin: fc.oneof(
      { weight: 2, arbitrary: fc.constant<AdminMode>('right') },
      fc.constantFrom<AdminMode>('missing', 'wrong'),
    ),
    forged: fc.constantFrom(...FORGED_COOKIES),
    pick: fc.nat(),
    xff: fc.oneof(
      { weight: 30, arbitrary: fc.constant('fresh') },
      fc.constantFrom('unknown', '::1', '1.1.1.1, 2.2.2.2', 'x'.repeat(300), '999.999.999.999', ''),
    ),
    extra: fc.oneof(
      { weight: 8, arbitrary: fc.constant({}) },
      fc.constantFrom<Record<string, string>>(
        { Accept: 'text/html' },
        { 'X-HTTP-Method-Override': 'DELETE' },
        { 'X-Request-Id': '<script>' },
        { 'X-Request-Id': 'a'.repeat(65) },
        { 'trpc-accept': 'application/jsonl' },
        { 'X-Forwarded-Host': 'evil.example' },
        { 'X-Forwarded-Proto': 'javascript' },
        { Accept: 'application/jsonl' },
        { 'Accept-Encoding': 'gzip, br' },
      ),
    ),
  });

const enc = (v: unknown) => pctEncode(v instanceof RawJson ? v.text : typeof v === 'string' ? v : toJson(v));

/** A value as query parameters: scalars as text, arrays as repeated keys, objects as key[sub]. */
function toQuery(value: unknown): string {
  if (!value || typeof value !== 'object' || Array.isArray(value) || value instanceof RawJson)
    return value === undefined ? '' : `input=${enc(value)}`;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (Array.isArray(v)) for (const item of v.slice(0, 20)) parts.push(`${pctEncode(k)}=${enc(item)}`);
    else if (v && typeof v === 'object' && !(v instanceof RawJson))
      for (const [sub, sv] of Object.entries(v).slice(0, 5))
        parts.push(`${pctEncode(k)}[${pctEncode(sub)}]=${enc(sv)}`);
    else parts.push(`${pctEncode(k)}=${v === null ? '' : enc(v)}`);
  }
  return parts.join('&');
}

const QUERY_JUNK = [
  '__proto__=1',
  'constructor=1',
  'toString=x',
  'hasOwnProperty=1',
  '__proto__[admin]=1',
  'constructor[prototype][admin]=1',
  'limit=1&limit=2',
  'offset=0&offset=0',
  'limit[]=1',
  'limit[x]=1',
  '%',
  '%zz=1',
  '=',
  '&&&',
  'limit',
  'a=%E0%A4%A',
  'limit=%00',
  'limit=1%00',
  'limit=%F0%9F%98%80',
  'input=%7B',
  'batch=1',
  'connectionParams=1',
];
const queryJunkArb = fc.oneof(
  fc.constantFrom(...QUERY_JUNK),
  hostileString.map((s) => `limit=${pctEncode(s)}`),
  hostileString.map((s) => `q=${pctEncode(s)}`),
);
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const PATH_VARIANTS = ['exact', 'trailing-slash', 'double-slash', 'upper', 'dot-segment', 'encoded-slash'] as const;

function pathVariant(path: string, variant: (typeof PATH_VARIANTS)[number]): string {
  switch (variant) {
    case 'trailing-slash':
      return `${path}/`;
    case 'double-slash':
      return path.replace('/', '//');
    case 'upper':
      return path.toUpperCase();
    case 'dot-segment':
      return `${path}/../${path.split('/').pop()}`;
    case 'encoded-slash':
      return path.replace(/\/([^/]*)$/, '%2F$1');
    default:
      return path;
  }
}

interface BodyChoice {
  mode: 'json' | 'malformed' | 'none' | 'gzip' | 'gzip-garbage' | 'br-label';
  contentType: string | undefined;
}
const bodyChoiceArb: fc.Arbitrary<BodyChoice> = fc.record({
  mode: fc.oneof(
    { weight: 14, arbitrary: fc.constant<BodyChoice['mode']>('json') },
    { weight: 3, arbitrary: fc.constant<BodyChoice['mode']>('malformed') },
    fc.constantFrom<BodyChoice['mode']>('none', 'gzip', 'gzip-garbage', 'br-label'),
  ),
  contentType: fc.oneof(
    { weight: 12, arbitrary: fc.constant<string | undefined>('application/json') },
    { weight: 3, arbitrary: fc.constantFrom<string | undefined>(...CONTENT_TYPES) },
    fc.constant<string | undefined>(undefined),
  ),
});

function body(
  choice: BodyChoice,
  value: unknown,
  malformed: string,
): Pick<Plan, 'body' | 'encoding' | 'contentType' | 'source'> {
  const json = toJson(value);
  switch (choice.mode) {
    case 'none':
      return { contentType: choice.contentType };
    case 'malformed':
      return { body: malformed, contentType: choice.contentType };
    case 'gzip':
      return { body: gzipSync(json), encoding: 'gzip', contentType: choice.contentType, source: json };
    case 'gzip-garbage':
      return { body: json, encoding: 'gzip', contentType: choice.contentType };
    case 'br-label':
      return { body: json, encoding: 'br', contentType: choice.contentType };
    default:
      return { body: json, contentType: choice.contentType };
  }
}

function threadIdOf(value: unknown): string | undefined {
  const v = value && typeof value === 'object' ? (value as Record<string, unknown>).threadId : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** A REST request for `op`: its route, mostly its method and path, a generated input. */
function restPlan(op: Operation, world: FuzzWorld, signedIn: boolean): fc.Arbitrary<Plan> {
  return fc
    .record({
      common: commonArb(signedIn),
      value: inputArb(op, world),
      bodyChoice: bodyChoiceArb,
      malformed: malformedJson,
      method: fc.oneof({ weight: 14, arbitrary: fc.constant(op.rest!.method) }, fc.constantFrom(...METHODS)),
      variant: fc.oneof(
        { weight: 14, arbitrary: fc.constant<(typeof PATH_VARIANTS)[number]>('exact') },
        fc.constantFrom(...PATH_VARIANTS),
      ),
      junk: fc.oneof({ weight: 6, arbitrary: fc.constant('') }, queryJunkArb),
    })
    .map(({ common, value, bodyChoice, malformed, method, variant, junk }) => {
      let rest: unknown = value;
      let path = op.rest!.path;
      let threadId: string | undefined;
      for (const param of path.match(/\{(\w+)\}/g) ?? []) {
        const name = param.slice(1, -1);
        const obj =
          rest && typeof rest === 'object' && !Array.isArray(rest) && !(rest instanceof RawJson)
            ? (rest as Record<string, unknown>)
            : {};
        const v = obj[name];
        if (name === 'threadId' && typeof v === 'string') threadId = v;
        path = path.replace(
          param,
          pctEncode(v instanceof RawJson ? v.text : typeof v === 'string' ? v : toJson(v ?? '')),
        );
        if (rest === obj) rest = Object.fromEntries(Object.entries(obj).filter(([k]) => k !== name));
      }
      path = pathVariant(path, variant);
      const usesQuery = method === 'GET' || method === 'HEAD';
      const query = [usesQuery ? toQuery(rest) : '', junk].filter(Boolean).join('&');
      const target = query ? `${path}?${query}` : path;
      const b = usesQuery ? { contentType: bodyChoice.contentType } : body(bodyChoice, rest, malformed);
      // Another method may reach another operation on the same path (GET vs PATCH /api/settings).
      return {
        ...common,
        ...b,
        op: method === op.rest!.method ? op : undefined,
        method,
        target,
        threadId,
        label: `REST ${method} ${target.slice(0, 160)} [${op.procedure}]`,
      };
    });
}

const BAD_PROCEDURES = [
  'nope',
  'mail',
  'mail.',
  '.mail.threads',
  'mail..threads',
  '__proto__',
  'constructor',
  'mail.__proto__',
  'mail.constructor',
  'toString',
  'auth.session.x',
  'MAIL.THREADS',
  'mail.threads%00',
  'mail%2Fthreads',
  '',
  'mail.threads/extra',
];

/** A /trpc request for `op`: its procedure (or a near miss), query or mutation, single or batched. */
function trpcPlan(op: Operation, world: FuzzWorld, signedIn: boolean): fc.Arbitrary<Plan> {
  const input = inputArb(op, world);
  return fc
    .record({
      common: commonArb(signedIn),
      value: input,
      second: input,
      name: fc.oneof(
        { weight: 14, arbitrary: fc.constant(op.procedure) },
        fc.constantFrom(...BAD_PROCEDURES),
        markerArb,
      ),
      shape: fc.oneof(
        { weight: 12, arbitrary: fc.constant('single' as const) },
        fc.constantFrom('batch' as const, 'batch-junk' as const, 'raw-input' as const, 'no-input' as const),
      ),
      swapMethod: fc.oneof(
        { weight: 12, arbitrary: fc.constant<string | null>(null) },
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'),
      ),
      bodyChoice: bodyChoiceArb,
      malformed: malformedJson,
      junk: fc.oneof({ weight: 8, arbitrary: fc.constant('') }, queryJunkArb),
    })
    .map(({ common, value, second, name, shape, swapMethod, bodyChoice, malformed, junk }) => {
      const method = swapMethod ?? (op.type === 'query' ? 'GET' : 'POST');
      const batch = shape === 'batch' || shape === 'batch-junk';
      const path = `/trpc/${batch ? `${name},${op.procedure}` : name}`;
      let inputValue: unknown = shape === 'no-input' ? undefined : value;
      if (shape === 'batch') inputValue = { 0: value, 1: second };
      if (shape === 'batch-junk') inputValue = value;
      const queryParts: string[] = [];
      if (batch) queryParts.push('batch=1');
      let b: Pick<Plan, 'body' | 'encoding' | 'contentType' | 'source'> = { contentType: bodyChoice.contentType };
      if (method === 'GET' || method === 'HEAD') {
        if (shape === 'raw-input') queryParts.push(`input=${pctEncode(malformed)}`);
        else if (inputValue !== undefined) queryParts.push(`input=${enc(inputValue)}`);
      } else {
        b =
          shape === 'raw-input'
            ? { body: malformed, contentType: bodyChoice.contentType }
            : inputValue === undefined
              ? { contentType: bodyChoice.contentType }
              : body(bodyChoice, inputValue, malformed);
      }
      if (junk) queryParts.push(junk);
      const target = queryParts.length ? `${path}?${queryParts.join('&')}` : path;
      const named = OPS.find((o) => o.procedure === name);
      const threadId = name === op.procedure ? threadIdOf(value) : undefined;
      const calls =
        shape === 'batch'
          ? [
              { op: named, threadId: threadIdOf(value) },
              { op, threadId: threadIdOf(second) },
            ]
          : shape === 'batch-junk'
            ? [{ op: named }, { op }]
            : undefined;
      return {
        ...common,
        ...b,
        op: batch ? undefined : named,
        batch: calls,
        method,
        target,
        threadId,
        label: `tRPC ${method} ${target.slice(0, 160)} [${op.procedure}/${shape}]`,
      };
    });
}

const PLAIN_PATHS = [
  '/',
  '/health',
  '/openapi.json',
  '/status',
  '/status.js',
  '/status.css',
  '/docs',
  '/docs/init.js',
  '/auth/provider',
  '/auth/provider/callback',
  '/auth/account',
  '/nope',
  '/api',
  '/api/',
  '/trpc',
  '/trpc/',
  '//evil.example',
  '/%2e%2e/etc/passwd',
  '/api/mail/threads/%2F..%2F',
  '/.env',
  '/favicon.ico',
  '/auth/provider/callback/',
  '/AUTH/PROVIDER',
  '/auth/provider/callback%00',
  '/api/mail/threads/../../auth/session',
  '/auth/provider/../provider/callback',
];

/** The plain routes (pages, OAuth legs, unknown paths) with hostile OAuth query parameters and cookies. */
function plainPlan(signedIn: boolean): fc.Arbitrary<Plan> {
  const param = fc.oneof(
    hostileString,
    fc.constantFrom(
      'https://evil.example/',
      '//evil.example',
      '/\\evil.example',
      'javascript:alert(1)',
      'access_denied',
      '',
    ),
    markerArb,
  );
  return fc
    .record({
      common: commonArb(signedIn),
      path: fc.constantFrom(...PLAIN_PATHS),
      method: fc.oneof({ weight: 6, arbitrary: fc.constant('GET') }, fc.constantFrom(...METHODS)),
      params: fc.dictionary(
        fc.constantFrom(
          'state',
          'code',
          'error',
          'redirect',
          'next',
          'return_to',
          'redirect_uri',
          'scope',
          'state ',
          'error_description',
        ),
        param,
        { maxKeys: 5 },
      ),
      dup: fc.boolean(),
      preauth: fc.constantFrom(
        '',
        'mia_oauth=forged',
        'mia_oauth=forged; mia_oauth.sig=forged',
        `mia_oauth=${'x'.repeat(500)}`,
      ),
      bodyChoice: bodyChoiceArb,
      value: hostileValue,
      malformed: malformedJson,
    })
    .map(({ common, path, method, params, dup, preauth, bodyChoice, value, malformed }) => {
      const parts = Object.entries(params).map(([k, v]) => `${encodeURIComponent(k)}=${pctEncode(v)}`);
      if (dup && parts.length) parts.push(parts[0]);
      const target = parts.length ? `${path}?${parts.join('&')}` : path;
      const b =
        method === 'GET' || method === 'HEAD'
          ? { contentType: bodyChoice.contentType }
          : body(bodyChoice, path === '/auth/account' ? withOwnKey({}, 'confirm', value) : value, malformed);
      const forged = preauth ? `${common.forged}; ${preauth}` : common.forged;
      return { ...common, ...b, forged, method, target, label: `PLAIN ${method} ${target.slice(0, 160)}` };
    });
}

/** The operation's input: from its Zod schema; analytics events also from each event's property schema. */
function inputArb(op: Operation, world: FuzzWorld): fc.Arbitrary<unknown> {
  const pools = { uuids: () => uuidPool(world) };
  const generic = arbFromSchema(op.schemas.input, pools, op.schemas.output);
  if (op.procedure !== 'analytics.event') return mutated(generic);
  const perEvent = Object.entries(ANALYTICS_EVENTS).map(([event, def]) => {
    const schemas = inputSchemas(def.properties);
    return fc.record(
      {
        event: fc.constant(event),
        properties: arbFromSchema(schemas.input, pools, schemas.output),
        anonymousId: uuidArb(pools),
      },
      { requiredKeys: ['event'] },
    );
  });
  return mutated(fc.oneof(generic, ...perEvent));
}

function uuidPool(world: FuzzWorld): string[] {
  const ids: string[] = [];
  for (const lane of world.lanes) ids.push(...lane.threadIds);
  return ids.concat(world.incidentIds);
}

// ------------------------------------------------------------------ sending

interface Stats {
  requests: number;
  byStatus: Map<number, number>;
  byCode: Map<string, number>;
  successes: Set<string>;
}

const MAX_TARGET = 6_000;
const slowest: [number, string][] = [];

const stats: Stats = { requests: 0, byStatus: new Map(), byCode: new Map(), successes: new Set() };
/** Every marker any request carried (checked against the logs at the end). */
const allMarkers = new Set<string>();

function materialise(plan: Plan, world: FuzzWorld, lane: Lane | undefined): SentRequest & { cookieOwner?: Lane } {
  const headers: Record<string, string> = {};
  let cookieOwner: Lane | undefined;
  const others = world.lanes.filter((l) => l !== lane);
  switch (plan.auth) {
    case 'lane':
      if (lane) {
        headers.Cookie = lane.browser.cookieHeader();
        cookieOwner = lane;
      }
      break;
    case 'other-lane':
      if (others.length) {
        cookieOwner = others[plan.pick % others.length];
        headers.Cookie = cookieOwner.browser.cookieHeader();
      }
      break;
    case 'forged':
      headers.Cookie = plan.forged;
      break;
    case 'dead': {
      const dead = world.lanes.flatMap((l) => l.deadCookies);
      headers.Cookie = dead[plan.pick % dead.length];
      break;
    }
    default:
      break;
  }
  if (!headers.Cookie) delete headers.Cookie;
  const token = lane?.csrfToken ?? world.lanes[plan.pick % world.lanes.length].csrfToken;
  switch (plan.csrf) {
    case 'right':
      headers['X-CSRF-Token'] = token;
      break;
    case 'wrong':
      headers['X-CSRF-Token'] = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
      break;
    // Never the token of the session whose cookie an 'other-lane' request carries.
    case 'other-lane':
      headers['X-CSRF-Token'] = (others[(plan.pick + 1) % Math.max(1, others.length)] ?? world.lanes[0]).csrfToken;
      break;
    case 'huge':
      headers['X-CSRF-Token'] = token.repeat(60);
      break;
    default:
      break;
  }
  const origin = {
    right: WEB_ORIGIN,
    evil: 'https://evil.example',
    null: 'null',
    slash: `${WEB_ORIGIN}/`,
    upper: WEB_ORIGIN.toUpperCase(),
    port: WEB_ORIGIN.replace(/:\d+$/, ':5174'),
    missing: '',
  }[plan.origin];
  if (origin) headers.Origin = origin;
  if (plan.admin === 'right') headers.Authorization = `Bearer ${ADMIN_TOKEN}`;
  if (plan.admin === 'wrong') headers.Authorization = `Bearer ${ADMIN_TOKEN.slice(0, -1)}X`;
  // Routes with a fixed limit get a fresh client address each time (the limits are tested
  // separately); the rest share the lane's address under the raised global limit.
  const fixed =
    plan.op?.fixedBucket || plan.target.startsWith('/auth/provider') || plan.target.startsWith('/auth/account');
  headers['X-Forwarded-For'] =
    plan.xff !== 'fresh' ? plan.xff : fixed ? world.nextIp() : `10.200.0.${(lane ? world.lanes.indexOf(lane) : 9) + 1}`;
  if (plan.contentType !== undefined) headers['Content-Type'] = plan.contentType;
  if (plan.encoding) headers['Content-Encoding'] = plan.encoding;
  Object.assign(headers, plan.extra);
  const hasBody = plan.body !== undefined && plan.method !== 'GET' && plan.method !== 'HEAD';
  // Node itself answers 431 past 16 KiB of request line and headers, before the app runs:
  // long query values are cut (often mid-escape, which is one more hostile input).
  const target = plan.target.length > MAX_TARGET ? plan.target.slice(0, MAX_TARGET) : plan.target;
  const text = `${target}\n${plan.source ?? (typeof plan.body === 'string' ? plan.body : '')}`;
  const markers = markersIn(text);
  for (const m of markers) allMarkers.add(m);
  return {
    method: plan.method,
    url: `${world.app.url}${target}`,
    headers,
    body: hasBody ? plan.body : undefined,
    markers,
    label: `${plan.label} auth=${plan.auth} csrf=${plan.csrf} origin=${plan.origin}`,
    cookieOwner,
  };
}

/** What must hold whenever a call of `op` succeeded, whatever the input. */
function checkCall(
  plan: Plan,
  req: SentRequest & { cookieOwner?: Lane },
  lane: Lane | undefined,
  op: Operation,
  threadId: string | undefined,
  status: number,
  text: string,
) {
  const world = currentWorld!;
  if (op.authed)
    assert.ok(
      plan.auth === 'lane' || plan.auth === 'other-lane',
      `${req.label}: an authenticated route (${op.procedure}) succeeded without a live session: ${status} ${text.slice(0, 300)} ${JSON.stringify(req.headers)}`,
    );
  if (op.csrf) {
    assert.equal(plan.csrf, 'right', `${req.label}: ${op.procedure} succeeded without the right CSRF token`);
    assert.equal(plan.origin, 'right', `${req.label}: ${op.procedure} succeeded without the right Origin`);
    assert.equal(plan.auth, 'lane', `${req.label}: ${op.procedure} succeeded with another session's CSRF token`);
  }
  if (op.admin)
    assert.equal(plan.admin, 'right', `${req.label}: ${op.procedure} succeeded without the admin credential`);
  if (op.takesThread && threadId) {
    const owner = world.threadOwner.get(threadId.toLowerCase());
    const caller = plan.auth === 'lane' ? lane : req.cookieOwner;
    assert.ok(
      !owner || owner === caller?.name,
      `${req.label}: ${caller?.name} got ${owner}'s thread through ${op.procedure}`,
    );
  }
  if (op.procedure === 'status.createIncident' && status === 201) world.incidentIds.push(JSON.parse(text).id);
}

let currentWorld: FuzzWorld | undefined;

/** Sends one plan and checks the answer; returns the outcome for the semantic checks. */
async function send(plan: Plan, world: FuzzWorld, lane: Lane | undefined): Promise<Outcome> {
  if (lane?.stale) await world.signIn(lane);
  const req = materialise(plan, world, lane);
  const started = performance.now();
  let res: Response;
  let text: string;
  try {
    res = await fetch(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body as BodyInit | undefined,
      redirect: 'manual',
    });
    text = req.method === 'HEAD' ? '' : await res.text();
  } catch (err) {
    throw new Error(
      `${req.label}: no answer (${(err as Error).message}: ${String((err as Error).cause)}); headers ${JSON.stringify(req.headers).slice(0, 300)}; body ${String(req.body).slice(0, 200)}`,
      { cause: err },
    );
  }
  const ms = performance.now() - started;
  slowest.push([ms, req.label.slice(0, 140)]);
  if (slowest.length > 40) slowest.sort((a, b) => b[0] - a[0]).splice(20);
  stats.requests += 1;
  stats.byStatus.set(res.status, (stats.byStatus.get(res.status) ?? 0) + 1);
  const outcome = checkResponse(
    req,
    { status: res.status, headers: res.headers, text },
    { redirects: world.redirects },
  );
  if (outcome.code) stats.byCode.set(outcome.code, (stats.byCode.get(outcome.code) ?? 0) + 1);
  if (outcome.ok && plan.op) stats.successes.add(plan.op.procedure);

  // A response that ended a session (logout, disconnect, deletion): that lane signs in again.
  const cleared = res.headers.getSetCookie().some((c) => /^mia_session=;/.test(c));
  if (cleared && req.cookieOwner) req.cookieOwner.stale = true;
  if (plan.auth === 'lane' && lane && outcome.code === 'AUTH_REQUIRED') lane.stale = true;

  // Security properties that hold for any input, per call (a tRPC batch answers each call).
  if (plan.method === 'HEAD' || plan.method === 'OPTIONS' || !outcome.ok) return outcome;
  // A JSONL stream (trpc-accept) answers 200 and carries any error inside.
  const errorsInside = req.url.includes('/trpc/') && trpcErrorObjects(text).length > 0;
  if (plan.batch && text.startsWith('[')) {
    const items = JSON.parse(text) as unknown[];
    plan.batch.forEach((call, i) => {
      if (call.op && items[i] && typeof items[i] === 'object' && 'result' in (items[i] as object))
        checkCall(plan, req, lane, call.op, call.threadId, 200, JSON.stringify(items[i]));
    });
  } else if (plan.batch && !errorsInside) {
    for (const call of plan.batch) if (call.op) checkCall(plan, req, lane, call.op, call.threadId, 200, text);
  } else if (plan.op && !errorsInside) checkCall(plan, req, lane, plan.op, plan.threadId, res.status, text);
  return outcome;
}

/** Runs the lanes concurrently; the first failure stops the others (no request outlives its test). */
async function concurrently(lanes: ((stopped: () => boolean) => Promise<unknown>)[]) {
  let stop = false;
  const results = await Promise.allSettled(
    lanes.map((run) =>
      run(() => stop).catch((err: unknown) => {
        stop = true;
        throw err;
      }),
    ),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Runs `runs` generated plans per lane, the lanes concurrently. */
async function fuzzLanes(
  world: FuzzWorld,
  lanes: (Lane | undefined)[],
  arb: fc.Arbitrary<Plan>,
  runs: number,
  seedOffset: number,
) {
  await concurrently(
    lanes.map(
      (lane, i) => (stopped) =>
        fc.assert(
          fc.asyncProperty(arb, async (plan) => {
            if (!stopped()) await send(plan, world, lane);
          }),
          { numRuns: runs, seed: SEED + seedOffset + i, endOnFailure: true },
        ),
    ),
  );
}

/** One arbitrary over every operation's REST route and /trpc procedure (operations weighted equally). */
function everything(world: FuzzWorld, signedIn: boolean): fc.Arbitrary<Plan> {
  const restOps = OPS.filter((o) => o.rest);
  // Ending the session is cheap to reach and costly to recover from: those routes are picked less.
  const w = (o: Operation) =>
    ['auth.logout', 'auth.disconnect', 'auth.deleteAccount'].includes(o.procedure) && signedIn ? 1 : 4;
  return fc.oneof(
    ...restOps.map((o) => ({ weight: w(o), arbitrary: restPlan(o, world, signedIn) })),
    ...OPS.map((o) => ({ weight: w(o), arbitrary: trpcPlan(o, world, signedIn) })),
    { weight: 6, arbitrary: plainPlan(signedIn) },
  );
}

// ------------------------------------------------------------------ tests

describe('hostile-input fuzzing of every REST route and /trpc', () => {
  let world: FuzzWorld;
  const cleanups: (() => unknown)[] = [];
  before(async () => {
    world = await startFuzzWorld({ after: (fn) => cleanups.push(fn) }, ['alice', 'bob', 'carol']);
    currentWorld = world;
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });

  it('covers every procedure of the spec (runtime contract 4d), with its REST route where it has one', (t) => {
    t.diagnostic(`FUZZ_SEED=${SEED}`);
    assert.deepEqual([...OPS.map((o) => o.procedure), ...STREAMING_PROCEDURES].sort(), [...SPEC_PROCEDURES].sort());
    const rest = OPS.filter((o) => o.rest)
      .map((o) => `${o.rest!.method} ${o.rest!.path}`)
      .sort();
    assert.deepEqual(rest, [
      'DELETE /auth/account',
      'GET /api/mail/sync-state',
      'GET /api/mail/threads',
      'GET /api/mail/threads/{threadId}',
      'GET /api/mail/threads/{threadId}/messages/{messageId}/body',
      'GET /api/settings',
      'GET /api/status/incidents',
      'GET /auth/session',
      'PATCH /api/settings',
      'PATCH /api/status/incidents/{id}',
      'POST /api/analytics/event',
      'POST /api/mail/sync',
      'POST /api/mail/threads/{threadId}/analyze',
      'POST /api/mail/threads/{threadId}/draft',
      'POST /api/status/incidents',
      'POST /auth/logout',
      'POST /auth/provider/disconnect',
      'PUT /api/mail/threads/{threadId}/analysis',
    ]);
    for (const lane of world.lanes) assert.ok(lane.threadIds.length >= 3, `${lane.name} has synced threads`);
  });

  it('anonymous: generated and hostile requests to every route get a success or the envelope', async () => {
    await fuzzLanes(world, [undefined, undefined], everything(world, false), 1_300, 1);
  });

  it('signed in: generated and hostile requests to every route get a success or the envelope', async () => {
    await fuzzLanes(world, world.lanes, everything(world, true), 1_400, 11);
  });

  it('every field at and past its bounds, with every hostile value, signed in with CSRF (REST and /trpc)', async (t) => {
    const base: Common = {
      auth: 'lane',
      csrf: 'right',
      origin: 'right',
      admin: 'right',
      forged: '',
      pick: 0,
      xff: 'fresh',
      extra: {},
    };
    const values: unknown[] = [
      null,
      true,
      0,
      -1,
      1.5,
      100,
      101,
      1_000_000_000,
      1_000_000_001,
      2 ** 53 + 2,
      1e308,
      [],
      {},
      '',
      ' ',
      '\u0000',
      'ok\u0000ok',
      '\ud800',
      'x\udfffy',
      '😀'.repeat(31),
      'é'.repeat(61),
      'a'.repeat(60),
      'a'.repeat(61),
      'a'.repeat(65),
      'a'.repeat(201),
      'a'.repeat(513),
      'a'.repeat(2000),
      'a'.repeat(2001),
      'a'.repeat(2049),
      'a'.repeat(5001),
      ' '.repeat(61),
      '  a  ',
      JSON.parse('{"__proto__":{"admin":true}}'),
      new RawJson(`${'['.repeat(40)}1${']'.repeat(40)}`),
    ];
    interface Case {
      op: Operation;
      field: string;
      value: unknown;
      transport: 'rest' | 'trpc';
    }
    const cases: Case[] = [];
    for (const op of OPS) {
      const props = Object.keys((op.schemas.input.properties ?? {}) as object);
      const nested = [
        'properties.path',
        'properties.referrer',
        'properties.threadId',
        'responseStyle.language',
        'responseStyle.preferredTone',
        'responseStyle.tone',
      ];
      // The session-ending routes only get inputs that can never be accepted.
      const fields = ['auth.logout', 'auth.disconnect'].includes(op.procedure)
        ? ['unknownField']
        : [...props, 'unknownField', ...nested.filter((f) => props.includes(f.split('.')[0]))];
      for (const field of fields) {
        for (const value of values) {
          for (const transport of ['rest', 'trpc'] as const)
            if (transport === 'trpc' || op.rest) cases.push({ op, field, value, transport });
        }
      }
    }

    const planFor = (c: Case, lane: Lane): Plan => {
      const { op, field, value, transport } = c;
      const thread = lane.threadIds[0];
      const input: Record<string, unknown> = {};
      if (op.takesThread) input.threadId = thread;
      if (op.procedure === 'status.updateIncident')
        input.id = world.incidentIds[0] ?? '7b0f7a4e-1111-4222-8333-444455556666';
      if (op.procedure === 'status.createIncident')
        Object.assign(input, {
          kind: 'incident',
          state: 'investigating',
          title: 't',
          message: 'm',
          affectedComponents: [],
        });
      if (op.procedure === 'analytics.event') Object.assign(input, { event: 'page_view', properties: { path: '/' } });
      if (op.procedure === 'auth.deleteAccount') input.confirm = false;
      if (op.procedure === 'settings.update') input.responseStyle = {};
      const [head, sub] = field.split('.');
      const withValue = sub
        ? { ...input, [head]: withOwnKey((input[head] as Record<string, unknown>) ?? {}, sub, value) }
        : withOwnKey(input, head, value);
      let target: string;
      let method: string;
      let reqBody: string | undefined;
      if (transport === 'rest') {
        method = op.rest!.method;
        let path = op.rest!.path;
        const rest = { ...withValue };
        for (const param of path.match(/\{(\w+)\}/g) ?? []) {
          const name = param.slice(1, -1);
          path = path.replace(
            param,
            pctEncode(typeof rest[name] === 'string' ? (rest[name] as string) : toJson(rest[name])),
          );
          delete rest[name];
        }
        if (method === 'GET') target = `${path}?${toQuery(rest)}`;
        else {
          target = path;
          reqBody = toJson(rest);
        }
      } else {
        method = op.type === 'query' ? 'GET' : 'POST';
        target = method === 'GET' ? `/trpc/${op.procedure}?input=${enc(withValue)}` : `/trpc/${op.procedure}`;
        if (method === 'POST') reqBody = toJson(withValue);
      }
      const threadId = typeof withValue.threadId === 'string' ? withValue.threadId : undefined;
      return {
        ...base,
        op,
        method,
        target,
        body: reqBody,
        contentType: 'application/json',
        threadId,
        label: `BOUNDARY ${transport} ${op.procedure} ${field}=${toJson(value).slice(0, 40)}`,
      };
    };

    // The cases shared out over the signed-in lanes, each lane in order (a deletion among them,
    // confirm: true, ends that lane's session; it signs in again before its next request).
    await concurrently(
      world.lanes.map((lane, i) => async (stopped) => {
        for (let k = i; k < cases.length && !stopped(); k += world.lanes.length) {
          if (lane.stale) await world.signIn(lane);
          await send(planFor(cases[k], lane), world, lane);
        }
      }),
    );
    t.diagnostic(`boundary requests: ${cases.length}`);
    assert.ok(cases.length > 1_500, `boundary requests sent: ${cases.length}`);
  });

  it("counts every hostile request against its route's own limit: the next one is RATE_LIMITED (REST and /trpc)", async () => {
    // One client address per route; as many generated hostile requests as the limit, sent
    // without a session (nothing can take effect), then one more that must be refused.
    const LIMITS: Record<string, number> = {
      'mail.sync': 10,
      'mail.analyze': 20,
      'mail.draft': 20,
      'mail.correctAnalysis': 20,
      'settings.update': 20,
      'analytics.event': 60,
      'auth.disconnect': 20,
      'auth.deleteAccount': 20,
    };
    let client = 0;
    for (const [procedure, limit] of Object.entries(LIMITS)) {
      const op = OPS.find((o) => o.procedure === procedure)!;
      assert.ok(op.fixedBucket, `${procedure} has its own bucket`);
      const xff = `10.250.0.${++client}`;
      const arb = fc
        .oneof(restPlan(op, world, false), trpcPlan(op, world, false))
        .map((p) => ({ ...p, xff, auth: 'anon' as AuthMode }));
      // Only plans that target the route itself (its method and path) count against its bucket.
      const restPath = new RegExp(`^${op.rest!.path.replace(/\{\w+\}/g, '[^/]+')}/?$`);
      // (OPTIONS is left to CORS preflights, which no limit counts.)
      const targetsRoute = (p: Plan) =>
        p.method !== 'OPTIONS' &&
        p.target.length <= MAX_TARGET &&
        (p.target.startsWith('/trpc/')
          ? p.op === op && !p.batch
          : p.op === op && restPath.test(new URL(p.target, 'http://x').pathname));
      const plans = fc.sample(arb.filter(targetsRoute), { numRuns: limit, seed: SEED + client });
      for (const plan of plans) {
        const outcome = await send(plan, world, undefined);
        assert.notEqual(outcome.code, 'RATE_LIMITED', `${plan.label}: refused before the limit was reached`);
      }
      // The extra request repeats a plan that has a body to read the code from (a HEAD answer has none).
      const again = plans.find((p) => p.method !== 'HEAD')!;
      const last = await send({ ...again, label: `${procedure}: request ${limit + 1}` }, world, undefined);
      assert.equal(
        last.code,
        'RATE_LIMITED',
        `${procedure}: request ${limit + 1} from one client is RATE_LIMITED (got ${last.status})`,
      );
    }
  });

  it('raw request targets no browser sends (dot segments, any case, doubled slashes) with prototype query keys', async () => {
    // fetch normalises a URL; node:http sends it as written, as any client may.
    const url = new URL(world.app.url);
    const lane = world.lanes[0];
    if (lane.stale) await world.signIn(lane);
    const thread = lane.threadIds[0];
    const raw = (method: string, target: string) =>
      new Promise<{ status: number; headers: Headers; text: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: url.hostname,
            port: url.port,
            method,
            path: target,
            headers: {
              Cookie: lane.browser.cookieHeader(),
              'X-CSRF-Token': lane.csrfToken,
              Origin: WEB_ORIGIN,
              'X-Forwarded-For': world.nextIp(),
              'Content-Type': 'application/json',
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const headers = new Headers();
              for (const [k, v] of Object.entries(res.headers))
                if (v !== undefined) for (const one of [v].flat()) headers.append(k, one);
              resolve({ status: res.statusCode!, headers, text: Buffer.concat(chunks).toString() });
            });
          },
        );
        req.on('error', reject);
        req.end(method === 'GET' ? undefined : '{}');
      });
    let sent = 0;
    for (const op of OPS.filter(
      (o) =>
        o.rest &&
        o.procedure !== 'auth.deleteAccount' &&
        o.procedure !== 'auth.disconnect' &&
        o.procedure !== 'auth.logout',
    )) {
      const path = op
        .rest!.path.replace('{threadId}', thread)
        .replace('{id}', world.incidentIds[0] ?? '7b0f7a4e-1111-4222-8333-444455556666');
      const tail = path.split('/').pop();
      const targets = [
        path.toUpperCase(),
        `/api/x/..${path.slice(4)}`,
        `${path}/./`,
        `${path}/../${tail}`,
        `/${path}`,
        `${path}//`,
        path.replace(/\//g, '/./'),
      ];
      for (const target of targets) {
        for (const query of [
          'constructor=1',
          '__proto__=1',
          'toString=x&hasOwnProperty=1',
          '__proto__[admin]=1',
          'valueOf=1&limit=1',
        ]) {
          const res = await raw(op.rest!.method, `${target}?${query}`);
          checkResponse(
            {
              method: op.rest!.method,
              url: `${world.app.url}${target}`,
              headers: {},
              markers: [],
              label: `RAW ${op.rest!.method} ${target}?${query}`,
            },
            res,
            { redirects: world.redirects },
          );
          sent += 1;
        }
      }
    }
    assert.ok(sent >= 300, `raw requests: ${sent}`);
  });

  it('a body refused part-way does not stall the keep-alive connection it came on', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(world.app.url);
    const request = (method: string, path: string, body?: Buffer) =>
      new Promise<{ status: number; socket: number; text: string }>((resolve, reject) => {
        // A body of unannounced length (chunked): the parser reads into it before refusing it.
        const req = http.request(
          {
            host: url.hostname,
            port: url.port,
            method,
            path,
            agent,
            headers: body ? { 'Content-Type': 'application/json', 'X-Forwarded-For': world.nextIp() } : {},
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({
                status: res.statusCode!,
                socket: (req.socket as { localPort?: number }).localPort ?? 0,
                text: Buffer.concat(chunks).toString(),
              }),
            );
          },
        );
        req.on('error', reject);
        if (body) for (let at = 0; at < body.length; at += 64 * 1024) req.write(body.subarray(at, at + 64 * 1024));
        req.end();
      });
    try {
      for (const path of ['/api/analytics/event', '/api/settings', '/trpc/analytics.event', '/api/status/incidents']) {
        const big = Buffer.from(JSON.stringify({ event: 'page_view', properties: { path: 'x'.repeat(1_000_000) } }));
        const refused = await request(path === '/api/settings' ? 'PATCH' : 'POST', path, big);
        assert.ok(refused.status >= 400 && refused.status < 500, `${path}: oversized body refused (${refused.status})`);
        const next = await request('GET', '/auth/session');
        assert.equal(next.status, 200, `${path}: the next request on the connection is answered`);
        assert.equal(next.socket, refused.socket, `${path}: on the same connection`);
      }
    } finally {
      agent.destroy();
    }
  });

  it('answers every hostile request of the run within the contract, at least 10,000 of them', (t) => {
    t.diagnostic(
      `requests: ${stats.requests}; statuses: ${JSON.stringify(Object.fromEntries(stats.byStatus))}; codes: ${JSON.stringify(Object.fromEntries(stats.byCode))}`,
    );
    t.diagnostic(
      `slowest: ${slowest
        .sort((a, b) => b[0] - a[0])
        .slice(0, 12)
        .map(([ms, l]) => `${ms.toFixed(0)}ms ${l}`)
        .join('\n')}`,
    );
    t.diagnostic(
      `sign-ins per lane: ${world.lanes.map((l) => `${l.name}=${l.signIns}`).join(', ')}; procedures that succeeded: ${[...stats.successes].sort().join(', ')}`,
    );
    assert.ok(stats.requests >= 10_000, `at least 10,000 fuzzed requests (${stats.requests})`);
    // The generators reached past the guards: most procedures succeeded at least once, and every
    // kind of refusal happened.
    for (const p of [
      'mail.threads',
      'mail.thread',
      'mail.analyze',
      'mail.draft',
      'mail.sync',
      'settings.update',
      'analytics.event',
      'status.createIncident',
      'auth.session',
    ]) {
      assert.ok(stats.successes.has(p), `${p} succeeded at least once`);
    }
    for (const code of ['VALIDATION_FAILED', 'AUTH_REQUIRED', 'CSRF_FAILED', 'NOT_FOUND', 'FORBIDDEN'])
      assert.ok((stats.byCode.get(code) ?? 0) > 0, `${code} was answered`);
  });

  it('logged no input value and no internal error while being fuzzed', () => {
    const logs = world.app.logs;
    assert.ok(logs.length > stats.requests, 'a log line per request at least');
    // Error lines are for what the service answered with a 5xx (none but 502/503 here): a
    // caller's bad input is no error of the service.
    const serverSide = new Set(['BAD_GATEWAY', 'SERVICE_UNAVAILABLE', 'GATEWAY_TIMEOUT']);
    const internal = logs.filter(
      (l) =>
        l.code === 'INTERNAL_ERROR' ||
        l.status === 500 ||
        (l.msg === 'trpc procedure failed' && !serverSide.has(l.trpcCode as string)) ||
        (l.level === 'error' && l.msg !== 'request failed' && l.msg !== 'trpc procedure failed'),
    );
    assert.deepEqual(internal.slice(0, 3), [], 'no INTERNAL_ERROR, and no error line for a client error');
    for (const line of logs) {
      // The request line names the path (path parameters included) by design; nothing else may carry input.
      const { path: _path, ...rest } = line as Record<string, unknown> & { path?: unknown };
      const text = JSON.stringify(rest);
      for (const m of markersIn(text)) assert.ok(!allMarkers.has(m), `marker ${m} logged: ${text.slice(0, 400)}`);
    }
  });
});
