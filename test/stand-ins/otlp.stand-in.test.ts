/**
 * The OTLP stand-in decodes what the real exporters send, in both encodings, into the same
 * spans: ids, parent, kind, attributes of every type, events, links, status, scope, resource.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { SimpleSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';
import { startOtlpStandIn, type OtlpStandIn } from '../../stand-ins/otlp.stand-in.ts';

describe('OTLP stand-in', () => {
  let standIn: OtlpStandIn;
  before(async () => {
    standIn = await startOtlpStandIn();
  });
  after(() => standIn.close());

  for (const [encoding, make, type] of [
    ['http/json', (url: string) => new JsonExporter({ url }), 'application/json'],
    ['http/protobuf', (url: string) => new ProtobufExporter({ url }), 'application/x-protobuf'],
  ] as const) {
    it(`decodes ${encoding} export requests`, async () => {
      standIn.reset();
      const exporter: SpanExporter = make(`${standIn.url}/v1/traces`);
      const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
      const tracer = provider.getTracer('stand-in-test-scope');
      const earlier = tracer.startSpan('earlier');
      earlier.end();
      const parent = tracer.startSpan('parent', { kind: SpanKind.SERVER });
      const child = tracer.startSpan(
        'child',
        {
          kind: SpanKind.CONSUMER,
          attributes: { s: 'text', i: 42, neg: -7, d: 1.5, b: true, list: ['a', 'b'] },
          links: [{ context: earlier.spanContext() }],
        },
        trace.setSpan(context.active(), parent),
      );
      child.addEvent('happened', { why: 'because' });
      child.setStatus({ code: SpanStatusCode.ERROR, message: 'it broke' });
      child.end();
      parent.end();
      await provider.forceFlush();

      const [p, c] = await standIn.waitFor((spans) => {
        const pp = spans.find((s) => s.name === 'parent');
        const cc = spans.find((s) => s.name === 'child');
        return pp && cc ? [pp, cc] : undefined;
      });
      assert.equal(standIn.requests.get(type), 3);
      assert.equal(p.parentSpanId, undefined);
      assert.equal(p.kind, 2);
      assert.equal(c.traceId, parent.spanContext().traceId);
      assert.equal(c.spanId, child.spanContext().spanId);
      assert.equal(c.parentSpanId, parent.spanContext().spanId);
      assert.equal(c.kind, 5);
      assert.deepEqual(c.attributes, { s: 'text', i: 42, neg: -7, d: 1.5, b: true, list: ['a', 'b'] });
      assert.deepEqual(c.events, [{ name: 'happened', attributes: { why: 'because' } }]);
      assert.deepEqual(c.links, [
        { traceId: earlier.spanContext().traceId, spanId: earlier.spanContext().spanId, attributes: {} },
      ]);
      assert.deepEqual(c.status, { code: 2, message: 'it broke' });
      assert.equal(c.scope, 'stand-in-test-scope');
      assert.match(String(c.resource['service.name']), /^unknown_service/);
      assert.ok(c.endNs >= c.startNs && c.startNs > 0n);
      assert.ok(
        standIn.bodies.some((b) => b.includes('it broke')),
        'bodies are kept as text',
      );
      await provider.shutdown();
    });
  }

  it('refuses what is not a trace export', async () => {
    assert.equal(
      (
        await fetch(`${standIn.url}/v1/metrics`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).status,
      404,
    );
    assert.equal(
      (
        await fetch(`${standIn.url}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-protobuf' },
          body: new Uint8Array([0x0a, 0xff]),
        })
      ).status,
      400,
    );
    await assert.rejects(
      standIn.waitFor(() => undefined, 50),
      /did not receive/,
    );
  });
});
