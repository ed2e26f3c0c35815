/**
 * When tracing runs (config), and what the last pass over every span removes before export
 * (infra/trace-scrub.ts): query values, SQL literals, quoted values in error messages, the
 * caller's address.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Span } from '@opentelemetry/sdk-trace';
import { ConfigError, loadConfig } from '../../server/infra/config.ts';
import { maskSqlLiterals, redactQuery, redactUrl, scrubSpan } from '../../server/infra/trace-scrub.ts';

describe('tracing runs only when configured', () => {
  const on = (env: NodeJS.ProcessEnv) => loadConfig(env).tracing.enabled;

  it('is off without OTEL_* variables, on with an endpoint or an exporter', () => {
    assert.equal(on({}), false);
    assert.equal(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(on({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
    assert.equal(on({ OTEL_TRACES_EXPORTER: 'console' }), true);
    assert.equal(on({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
    assert.equal(on({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), false, 'a protocol alone names no destination');
  });

  it('stays off when switched off, whatever else is set', () => {
    assert.equal(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }), false);
    assert.equal(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
  });

  it('refuses mistyped values, naming each', () => {
    const err = (() => {
      try {
        loadConfig({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
          OTEL_TRACES_EXPORTER: 'jaeger',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http',
          OTEL_SDK_DISABLED: 'yes',
        });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('accepted');
    })();
    assert.deepEqual(
      new Set(err.problems.map((p) => p.split(':')[0])),
      new Set([
        'OTEL_EXPORTER_OTLP_ENDPOINT',
        'OTEL_TRACES_EXPORTER',
        'OTEL_EXPORTER_OTLP_PROTOCOL',
        'OTEL_SDK_DISABLED',
      ]),
    );
  });
});

describe('what no exported span keeps', () => {
  it('keeps the keys of a query string, never its values', () => {
    assert.equal(redactQuery('?code=4/0Ab-xyz&state=s3cr3t'), '?code=REDACTED&state=REDACTED');
    assert.equal(redactQuery('limit=50&unread=true'), 'limit=REDACTED&unread=REDACTED');
    assert.equal(redactQuery('alice@example.com'), 'REDACTED=REDACTED', 'a key that looks like data goes too');
    assert.equal(redactQuery(''), '');
  });

  it('redacts a URL: query values, fragment and user information', () => {
    assert.equal(
      redactUrl('https://oauth2.example/revoke?token=ya29.abc'),
      'https://oauth2.example/revoke?token=REDACTED',
    );
    assert.equal(redactUrl('https://user:pw@host.example/p?q=invoice#frag'), 'https://host.example/p?q=REDACTED');
    assert.equal(
      redactUrl('http://127.0.0.1:3000/gmail/v1/users/me/threads/abc'),
      'http://127.0.0.1:3000/gmail/v1/users/me/threads/abc',
    );
  });

  it('masks every quoted SQL literal, keeping identifiers, placeholders and numbers', () => {
    assert.equal(
      maskSqlLiterals(`select 1 from accounts where email = 'alice@example.com' and id = $1 limit 5`),
      `select 1 from accounts where email = '?' and id = $1 limit 5`,
    );
    assert.equal(
      maskSqlLiterals(`insert into "sessions" ("data") values ('{"csrf":"it''s"}')`),
      `insert into "sessions" ("data") values ('?')`,
    );
    assert.equal(maskSqlLiterals(`select E'line\\'s end', $tag$ body 'quoted' $tag$, $$x$$`), `select '?', '?', '?'`);
    assert.equal(maskSqlLiterals('select $1::jsonb, $2'), 'select $1::jsonb, $2');
  });

  it('scrubs a span as it ends: attributes, status message, exception events', () => {
    const span = {
      attributes: {
        'url.full': 'http://127.0.0.1/auth/provider/callback?code=abc&state=def',
        'url.query': 'code=abc&state=def',
        'db.query.text': `select * from accounts where email = 'alice@example.com'`,
        'client.address': '203.0.113.9',
        'http.route': '/auth/provider/callback',
      },
      status: { code: 2, message: 'invalid input syntax for type uuid: "alice@example.com"' },
      events: [
        {
          name: 'exception',
          attributes: {
            'exception.message': 'Key (email)=(alice@example.com) already exists',
            'exception.stacktrace': 'Error: Key (email)=(alice@example.com) already exists\n    at f (file.ts:1:1)',
          },
        },
      ],
    } as unknown as Span;
    scrubSpan(span);
    assert.deepEqual(span.attributes, {
      'url.full': 'http://127.0.0.1/auth/provider/callback?code=REDACTED&state=REDACTED',
      'url.query': 'code=REDACTED&state=REDACTED',
      'db.query.text': `select * from accounts where email = '?'`,
      'http.route': '/auth/provider/callback',
    });
    assert.equal(span.status.message, 'invalid input syntax for type uuid: "[value]"');
    assert.deepEqual(span.events[0]!.attributes, {
      'exception.message': 'Key (email)=([value]) already exists',
      'exception.stacktrace': '    at f (file.ts:1:1)',
    });
  });
});
