/**
 * loadConfig (runtime-contract part 2): defaults, derived values, the `configured` flags,
 * one ConfigError naming every bad variable (never a secret's value), production's
 * required variables, and the process refusing to start on bad configuration.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../../server/infra/config.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const key32 = () => randomBytes(32).toString('base64');

/** Runs loadConfig expecting a ConfigError; returns it. */
function configError(env: NodeJS.ProcessEnv): ConfigError {
  let caught: unknown;
  try {
    loadConfig(env);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  return caught;
}

/** The variable names a ConfigError's problems mention (each problem starts with `NAME:`). */
const namesIn = (err: ConfigError) => new Set(err.problems.map((p) => p.split(':')[0]));

describe('loadConfig defaults (runtime-contract part 2)', () => {
  it('fills every default from an empty environment', () => {
    const c = loadConfig({});
    assert.equal(c.port, 3000);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.publicBaseUrl, 'http://localhost:3000');
    assert.equal(c.webOrigin, 'http://localhost:5173');
    assert.equal(c.statusPageUrl, 'http://localhost:3000/status');
    assert.equal(c.production, false);
    assert.equal(c.trustProxy, false);
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.secureCookies, false);
    assert.equal(c.oauth.configured, false);
    assert.equal(c.oauth.redirectUri, 'http://localhost:3000/auth/provider/callback');
    assert.equal(c.oauth.authUrl, 'https://accounts.google.com/o/oauth2/v2/auth');
    assert.equal(c.oauth.tokenUrl, 'https://oauth2.googleapis.com/token');
    assert.equal(c.oauth.revokeUrl, 'https://oauth2.googleapis.com/revoke');
    assert.equal(c.oauth.userinfoUrl, 'https://openidconnect.googleapis.com/v1/userinfo');
    assert.equal(c.oauth.stateTtlSeconds, 600);
    assert.equal(c.gmailApiUrl, 'https://gmail.googleapis.com/');
    assert.equal(c.openai.configured, false);
    assert.equal(typeof c.openai.model, 'string');
    assert.ok(c.openai.model.length > 0);
    assert.deepEqual(c.rateLimit, { max: 100, windowSeconds: 60, analyticsAnonymousPerMinute: 600 });
    assert.deepEqual(c.aiBudget, { daily: 20_000, monthly: 200_000, autoShare: 0.5 });
    assert.equal(c.statusAdminToken, undefined);
    assert.deepEqual(c.pubsub, {
      projectId: undefined,
      topic: undefined,
      subscription: undefined,
      emulatorHost: undefined,
    });
  });

  it('derives PUBLIC_BASE_URL from PORT, and STATUS_PAGE_URL and the redirect URI from PUBLIC_BASE_URL', () => {
    const byPort = loadConfig({ PORT: '8080' });
    assert.equal(byPort.port, 8080);
    assert.equal(byPort.publicBaseUrl, 'http://localhost:8080');
    assert.equal(byPort.statusPageUrl, 'http://localhost:8080/status');
    assert.equal(byPort.oauth.redirectUri, 'http://localhost:8080/auth/provider/callback');

    const byBase = loadConfig({ PORT: '8080', PUBLIC_BASE_URL: 'https://mail.example.com' });
    assert.equal(byBase.publicBaseUrl, 'https://mail.example.com');
    assert.equal(byBase.statusPageUrl, 'https://mail.example.com/status');
    assert.equal(byBase.oauth.redirectUri, 'https://mail.example.com/auth/provider/callback');
    assert.equal(byBase.secureCookies, true);
  });

  it('takes explicit values over the defaults', () => {
    const c = loadConfig({
      HOST: '0.0.0.0',
      WEB_ORIGIN: 'https://app.example.com',
      STATUS_PAGE_URL: 'https://status.example.com/',
      TRUST_PROXY: 'true',
      RATE_LIMIT_MAX: '7',
      RATE_LIMIT_WINDOW_SECONDS: '30',
      AI_DAILY_TOKEN_BUDGET: '1000',
      AI_MONTHLY_TOKEN_BUDGET: '5000',
      AUTO_TRIAGE_BUDGET_SHARE: '0.25',
      OAUTH_STATE_TTL_SECONDS: '2',
      GMAIL_API_URL: 'http://127.0.0.1:9999',
      DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
    });
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.webOrigin, 'https://app.example.com');
    assert.equal(c.statusPageUrl, 'https://status.example.com/');
    assert.equal(c.trustProxy, true);
    assert.deepEqual(c.rateLimit, { max: 7, windowSeconds: 30, analyticsAnonymousPerMinute: 600 });
    assert.deepEqual(c.aiBudget, { daily: 1000, monthly: 5000, autoShare: 0.25 });
    assert.equal(c.oauth.stateTtlSeconds, 2);
    assert.equal(c.gmailApiUrl, 'http://127.0.0.1:9999/');
    assert.equal(c.databaseUrl, 'postgres://u:p@127.0.0.1:5432/db');
  });

  it('treats blank values as unset', () => {
    const c = loadConfig({ PORT: '', RATE_LIMIT_MAX: '  ', GOOGLE_CLIENT_ID: '', GOOGLE_CLIENT_SECRET: '' });
    assert.equal(c.port, 3000);
    assert.equal(c.rateLimit.max, 100);
    assert.equal(c.oauth.configured, false);
  });

  it('counts OAuth as configured only when both client id and secret are set', () => {
    assert.equal(loadConfig({ GOOGLE_CLIENT_ID: 'id' }).oauth.configured, false);
    assert.equal(loadConfig({ GOOGLE_CLIENT_SECRET: 'secret' }).oauth.configured, false);
    const both = loadConfig({ GOOGLE_CLIENT_ID: 'id', GOOGLE_CLIENT_SECRET: 'secret' });
    assert.equal(both.oauth.configured, true);
    assert.equal(both.oauth.clientId, 'id');
  });

  it('counts AI as configured only when OPENAI_API_KEY is set', () => {
    assert.equal(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }).openai.configured, false);
    assert.equal(loadConfig({ OPENAI_API_KEY: 'sk-test' }).openai.configured, true);
  });

  it('accepts a 32-byte TOKEN_ENCRYPTION_KEY and keeps rotation order', () => {
    const a = key32();
    const b = key32();
    const c = loadConfig({
      TOKEN_ENCRYPTION_KEY: `${a},${b}`,
      SESSION_SECRET: 'newest-secret-0123456789,older-secret-0123456789',
    });
    assert.equal(c.tokenKeys?.length, 2);
    assert.equal(c.tokenKeys?.[0].length, 32);
    assert.deepEqual(c.tokenKeys?.[0], Buffer.from(a, 'base64'));
    assert.deepEqual(c.sessionKeys, ['newest-secret-0123456789', 'older-secret-0123456789']);
  });
});

describe('loadConfig refuses bad configuration', () => {
  it('names every bad variable in one ConfigError, without the values of secrets', () => {
    const badKey = randomBytes(16).toString('base64'); // 16 bytes: wrong length
    const badSecret = 'tiny-SeCrEt-42'; // under 16 characters
    const err = configError({
      PORT: 'eighty',
      PUBLIC_BASE_URL: 'nope',
      RATE_LIMIT_MAX: '1.5',
      RATE_LIMIT_WINDOW_SECONDS: 'abc',
      TOKEN_ENCRYPTION_KEY: badKey,
      SESSION_SECRET: badSecret,
      TRUST_PROXY: 'yes',
    });
    const names = namesIn(err);
    for (const name of [
      'PORT',
      'PUBLIC_BASE_URL',
      'RATE_LIMIT_MAX',
      'RATE_LIMIT_WINDOW_SECONDS',
      'TOKEN_ENCRYPTION_KEY',
      'SESSION_SECRET',
      'TRUST_PROXY',
    ]) {
      assert.ok(names.has(name), `problems name ${name}: ${err.problems.join(' | ')}`);
      assert.ok(err.message.includes(name), `message names ${name}`);
    }
    assert.equal(names.size, 7, 'only the bad variables are named');
    assert.ok(!err.message.includes(badKey), 'the key value is not in the message');
    assert.ok(!err.message.includes(badSecret), 'the session secret is not in the message');
    assert.ok(!err.problems.some((p) => p.includes(badKey) || p.includes(badSecret)));
  });

  it('never includes the value of a malformed secret, whatever the reason', () => {
    for (const value of [
      '!!!not-base64!!!-DISTINCT',
      `${key32()},DISTINCT-second-key`,
      `${randomBytes(31).toString('base64')}`,
      `${randomBytes(33).toString('base64')}`,
    ]) {
      const err = configError({ TOKEN_ENCRYPTION_KEY: value });
      assert.deepEqual([...namesIn(err)], ['TOKEN_ENCRYPTION_KEY']);
      for (const part of value.split(',')) assert.ok(!err.message.includes(part), `message leaks ${part}`);
    }
    const err = configError({ SESSION_SECRET: 'a-long-enough-secret-value,SHORT-SECRET' });
    assert.deepEqual([...namesIn(err)], ['SESSION_SECRET']);
    assert.ok(!err.message.includes('SHORT-SECRET') && !err.message.includes('a-long-enough-secret-value'));
    const admin = configError({ STATUS_ADMIN_TOKEN: 'short-ADMIN-tk' });
    assert.deepEqual([...namesIn(admin)], ['STATUS_ADMIN_TOKEN']);
    assert.ok(!admin.message.includes('short-ADMIN-tk'));
  });

  it('refuses malformed URLs', () => {
    for (const [name, value] of [
      ['PUBLIC_BASE_URL', 'not a url'],
      ['WEB_ORIGIN', 'ftp://web.example.com'],
      ['STATUS_PAGE_URL', 'status'],
      ['GOOGLE_TOKEN_URL', 'http//missing-colon'],
      ['GMAIL_API_URL', 'javascript:alert(1)'],
      ['OPENAI_BASE_URL', '://x'],
      ['DATABASE_URL', 'mysql://u@h/db'],
    ] as const) {
      const err = configError({ [name]: value });
      assert.deepEqual([...namesIn(err)], [name], `${name}=${value}`);
    }
  });

  it('refuses non-integer and out-of-range limits', () => {
    for (const value of ['abc', '1.5', '1e3', '-1', '0x10', '10 ', '0']) {
      const err = configError({ RATE_LIMIT_MAX: value });
      assert.deepEqual([...namesIn(err)], ['RATE_LIMIT_MAX'], `RATE_LIMIT_MAX=${JSON.stringify(value)}`);
    }
    for (const name of [
      'RATE_LIMIT_WINDOW_SECONDS',
      'AI_DAILY_TOKEN_BUDGET',
      'AI_MONTHLY_TOKEN_BUDGET',
      'OAUTH_STATE_TTL_SECONDS',
      'PORT',
    ]) {
      const err = configError({ [name]: '12.5' });
      assert.deepEqual([...namesIn(err)], [name]);
    }
    assert.deepEqual([...namesIn(configError({ PORT: '70000' }))], ['PORT']);
  });

  it('AUTO_TRIAGE_BUDGET_SHARE: a number from 0 (no analysis on arrival) to 1', () => {
    for (const [value, share] of [
      ['0', 0],
      ['1', 1],
      ['0.5', 0.5],
      ['0.125', 0.125],
      ['1.0', 1],
    ] as const)
      assert.equal(loadConfig({ AUTO_TRIAGE_BUDGET_SHARE: value }).aiBudget.autoShare, share);
    for (const value of ['1.5', '-0.1', 'half', '.5', '50%', '0.1234567']) {
      assert.deepEqual(
        [...namesIn(configError({ AUTO_TRIAGE_BUDGET_SHARE: value }))],
        ['AUTO_TRIAGE_BUDGET_SHARE'],
        value,
      );
    }
  });

  it('ANALYTICS_ANONYMOUS_PER_MINUTE: a whole number from 0 (no anonymous event stored) to 1,000,000', () => {
    assert.equal(loadConfig({ ANALYTICS_ANONYMOUS_PER_MINUTE: '0' }).rateLimit.analyticsAnonymousPerMinute, 0);
    assert.equal(
      loadConfig({ ANALYTICS_ANONYMOUS_PER_MINUTE: '1000000' }).rateLimit.analyticsAnonymousPerMinute,
      1_000_000,
    );
    for (const value of ['-1', '1.5', 'lots', '1000001']) {
      assert.deepEqual(
        [...namesIn(configError({ ANALYTICS_ANONYMOUS_PER_MINUTE: value }))],
        ['ANALYTICS_ANONYMOUS_PER_MINUTE'],
        value,
      );
    }
  });

  it('EVENT_STREAMS_PER_INSTANCE: 2,000 unless set, a whole number from 1 to 100,000', () => {
    assert.equal(loadConfig({}).eventStreamsPerInstance, 2_000);
    assert.equal(loadConfig({ EVENT_STREAMS_PER_INSTANCE: '1' }).eventStreamsPerInstance, 1);
    for (const value of ['0', '1.5', 'many', '100001']) {
      assert.deepEqual(
        [...namesIn(configError({ EVENT_STREAMS_PER_INSTANCE: value }))],
        ['EVENT_STREAMS_PER_INSTANCE'],
        value,
      );
    }
  });

  it('refuses a TOKEN_ENCRYPTION_KEY of the wrong length', () => {
    for (const bytes of [16, 31, 33, 64]) {
      const err = configError({ TOKEN_ENCRYPTION_KEY: randomBytes(bytes).toString('base64') });
      assert.deepEqual([...namesIn(err)], ['TOKEN_ENCRYPTION_KEY'], `${bytes} bytes`);
    }
  });

  /** A production environment that passes every check; each test takes one thing away. */
  const PROD = () => ({
    NODE_ENV: 'production',
    SESSION_SECRET: 'a-production-secret-0123456789-abcdef',
    TOKEN_ENCRYPTION_KEY: key32(),
    DATABASE_URL: 'postgres://u:p@db/x',
    PUBLIC_BASE_URL: 'https://api.example.com',
    WEB_ORIGIN: 'https://app.example.com',
  });

  it('NODE_ENV=production names every missing secret and DATABASE_URL', () => {
    const all = configError({ NODE_ENV: 'production' });
    assert.deepEqual([...namesIn(all)].sort(), [
      'DATABASE_URL',
      'PUBLIC_BASE_URL',
      'SESSION_SECRET',
      'TOKEN_ENCRYPTION_KEY',
      'WEB_ORIGIN',
    ]);

    const onlyDb = configError({ ...PROD(), DATABASE_URL: undefined });
    assert.deepEqual([...namesIn(onlyDb)], ['DATABASE_URL']);

    const noKey = configError({ ...PROD(), TOKEN_ENCRYPTION_KEY: undefined });
    assert.deepEqual([...namesIn(noKey)], ['TOKEN_ENCRYPTION_KEY']);

    const ok = loadConfig(PROD());
    assert.equal(ok.production, true);
    assert.equal(ok.secureCookies, true);
  });

  it('NODE_ENV=production refuses the loose defaults, naming each: http base URL, defaulted web origin, short session keys', () => {
    assert.deepEqual(
      [...namesIn(configError({ ...PROD(), PUBLIC_BASE_URL: 'http://api.example.com' }))],
      ['PUBLIC_BASE_URL'],
    );
    assert.deepEqual([...namesIn(configError({ ...PROD(), PUBLIC_BASE_URL: undefined }))], ['PUBLIC_BASE_URL']);
    assert.deepEqual([...namesIn(configError({ ...PROD(), WEB_ORIGIN: undefined }))], ['WEB_ORIGIN']);
    assert.deepEqual(
      [...namesIn(configError({ ...PROD(), SESSION_SECRET: 'only-twenty-chars-xx' }))],
      ['SESSION_SECRET'],
    );
    // A rotation list: every key must be long enough, the old one too.
    assert.deepEqual(
      [...namesIn(configError({ ...PROD(), SESSION_SECRET: `${'n'.repeat(40)},${'o'.repeat(20)}` }))],
      ['SESSION_SECRET'],
    );
    const all = configError({
      ...PROD(),
      PUBLIC_BASE_URL: 'http://x.example',
      WEB_ORIGIN: '',
      SESSION_SECRET: 's'.repeat(16),
    });
    assert.deepEqual([...namesIn(all)].sort(), ['PUBLIC_BASE_URL', 'SESSION_SECRET', 'WEB_ORIGIN']);
    assert.ok(!all.message.includes('s'.repeat(16)), 'the secret itself is never in the message');
  });

  it('NODE_ENV=production refuses an http web origin or provider URL and the Pub/Sub emulator, naming each', () => {
    const names = [
      'WEB_ORIGIN',
      'GOOGLE_REDIRECT_URI',
      'GOOGLE_AUTH_URL',
      'GOOGLE_TOKEN_URL',
      'GOOGLE_REVOKE_URL',
      'GOOGLE_USERINFO_URL',
      'GMAIL_API_URL',
      'OPENAI_BASE_URL',
    ];
    for (const name of names) {
      for (const url of ['http://provider.example.com/x', 'http://127.0.0.1:8080/x']) {
        assert.deepEqual([...namesIn(configError({ ...PROD(), [name]: url }))], [name], `${name}=${url}`);
      }
      assert.ok(loadConfig({ ...PROD(), [name]: 'https://provider.example.com/x' }), `${name} over https`);
      assert.ok(loadConfig({ [name]: 'http://127.0.0.1:8080/x' }), `${name} over http outside production`);
    }
    assert.deepEqual(
      [...namesIn(configError({ ...PROD(), PUBSUB_EMULATOR_HOST: 'pubsub:8085' }))],
      ['PUBSUB_EMULATOR_HOST'],
    );
    assert.equal(loadConfig({ PUBSUB_EMULATOR_HOST: 'pubsub:8085' }).pubsub.emulatorHost, 'pubsub:8085');
  });

  it('NODE_ENV=production refuses an http OTLP endpoint, naming each; https is accepted', () => {
    for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) {
      assert.deepEqual([...namesIn(configError({ ...PROD(), [name]: 'http://collector.example:4318' }))], [name]);
      assert.equal(loadConfig({ ...PROD(), [name]: 'https://collector.example:4318' }).tracing.enabled, true);
      assert.equal(
        loadConfig({ [name]: 'http://127.0.0.1:4318' }).tracing.enabled,
        true,
        `${name} over http outside production`,
      );
    }
    const both = configError({
      ...PROD(),
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c.example:4317',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'HTTP://c.example:4318/v1/traces',
    });
    assert.deepEqual([...namesIn(both)].sort(), ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
    assert.match(both.message, /OTEL_EXPORTER_OTLP_ENDPOINT: must be an https URL when NODE_ENV=production/);
  });

  it('reads TRUST_TRACEPARENT (true or false, default false)', () => {
    assert.equal(loadConfig({}).tracing.trustTraceparent, false);
    assert.equal(loadConfig({ TRUST_TRACEPARENT: 'false' }).tracing.trustTraceparent, false);
    assert.equal(loadConfig({ TRUST_TRACEPARENT: 'true' }).tracing.trustTraceparent, true);
    assert.deepEqual([...namesIn(configError({ TRUST_TRACEPARENT: 'yes' }))], ['TRUST_TRACEPARENT']);
  });

  it('reads TRUST_PROXY_HOPS (1..10, default 1)', () => {
    assert.equal(loadConfig({}).trustProxyHops, 1);
    assert.equal(loadConfig({}).backgroundWorkers, true, 'workers run unless told otherwise');
    assert.equal(loadConfig({ BACKGROUND_WORKERS: 'false' }).backgroundWorkers, false);
    assert.throws(() => loadConfig({ BACKGROUND_WORKERS: 'no' }), /BACKGROUND_WORKERS/);
    assert.equal(loadConfig({ TRUST_PROXY: 'true', TRUST_PROXY_HOPS: '2' }).trustProxyHops, 2);
    assert.deepEqual([...namesIn(configError({ TRUST_PROXY_HOPS: '0' }))], ['TRUST_PROXY_HOPS']);
  });

  it('reads the provider timeouts (ms), the sync lease and the job supervision interval (s); unset, each module keeps its own default', () => {
    const unset = loadConfig({});
    assert.deepEqual(unset.timeoutsMs, { identity: undefined, mail: undefined, ai: undefined, queue: undefined });
    assert.equal(unset.syncLeaseSeconds, undefined);
    assert.equal(unset.jobSuperviseSeconds, undefined);
    const c = loadConfig({
      GOOGLE_TIMEOUT_MS: '1500',
      GMAIL_TIMEOUT_MS: '2000',
      OPENAI_TIMEOUT_MS: '2500',
      PUBSUB_TIMEOUT_MS: '3000',
      SYNC_LEASE_SECONDS: '3',
      JOB_SUPERVISE_SECONDS: '1',
    });
    assert.deepEqual(c.timeoutsMs, { identity: 1500, mail: 2000, ai: 2500, queue: 3000 });
    assert.equal(c.syncLeaseSeconds, 3);
    assert.equal(c.jobSuperviseSeconds, 1);
    for (const name of ['GOOGLE_TIMEOUT_MS', 'GMAIL_TIMEOUT_MS', 'OPENAI_TIMEOUT_MS', 'PUBSUB_TIMEOUT_MS']) {
      for (const value of ['99', '1.5', '600001', '2s'])
        assert.deepEqual([...namesIn(configError({ [name]: value }))], [name], `${name}=${value}`);
    }
    for (const value of ['0', '3601', '0.5'])
      assert.deepEqual([...namesIn(configError({ SYNC_LEASE_SECONDS: value }))], ['SYNC_LEASE_SECONDS']);
    for (const value of ['0', '601'])
      assert.deepEqual([...namesIn(configError({ JOB_SUPERVISE_SECONDS: value }))], ['JOB_SUPERVISE_SECONDS']);
  });

  it('refuses unbound v1 token ciphertexts in production unless TOKEN_ACCEPT_V1=true', () => {
    assert.equal(loadConfig(PROD()).tokenAcceptV1, false);
    assert.equal(loadConfig({ ...PROD(), TOKEN_ACCEPT_V1: 'true' }).tokenAcceptV1, true);
    assert.equal(loadConfig({}).tokenAcceptV1, true, 'outside production they still decrypt');
    assert.equal(loadConfig({ TOKEN_ACCEPT_V1: 'false' }).tokenAcceptV1, false);
    assert.deepEqual([...namesIn(configError({ TOKEN_ACCEPT_V1: 'yes' }))], ['TOKEN_ACCEPT_V1']);
  });

  it('does not require the production secrets outside production', () => {
    const c = loadConfig({ NODE_ENV: 'development' });
    assert.equal(c.production, false);
    assert.equal(c.sessionKeys, undefined);
    assert.equal(c.tokenKeys, undefined);
  });
});

describe('start-up with bad configuration (process level)', () => {
  it('exits 1 naming every bad variable, before starting any database', async (t) => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'mia-config-'));
    t.after(() => rm(dataDir, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MIA_DATA_DIR: dataDir,
      RATE_LIMIT_MAX: 'abc',
      PUBLIC_BASE_URL: 'nope',
      LOG_LEVEL: 'silent',
    };
    if (process.env.NODE_V8_COVERAGE) env.NODE_V8_COVERAGE = process.env.NODE_V8_COVERAGE;
    const child = spawn(process.execPath, ['server/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    clearTimeout(killer);
    assert.equal(code, 1, `exit code (stderr: ${stderr})`);
    assert.match(stderr, /RATE_LIMIT_MAX/);
    assert.match(stderr, /PUBLIC_BASE_URL/);
    assert.ok(!/listening/i.test(stdout + stderr), 'the server never listened');
    assert.deepEqual(await readdir(dataDir), [], 'no database (nor anything else) was created in the data directory');
  });
});
