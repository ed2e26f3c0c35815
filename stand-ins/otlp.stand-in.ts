/**
 * A stand-in for an OpenTelemetry collector's OTLP/HTTP trace receiver, for tests and the
 * bench. Plain `node:http` on 127.0.0.1:0; point the service at it with
 * `OTEL_EXPORTER_OTLP_ENDPOINT=<standIn.url>`.
 *
 * Serves POST /v1/traces in both encodings the exporters send: `application/json`
 * (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) and `application/x-protobuf` (`http/protobuf`,
 * the default), gzip or not, answering an empty ExportTraceServiceResponse. Anything else is
 * 404. Every span received is kept, decoded into one shape (otlp/trace.decode.ts), with each
 * request's body as text for scanning; `waitFor` resolves as soon as what a test waits for
 * has arrived.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import type { OtlpStandIn, ReceivedSpan } from './otlp/otlp.types.ts';
import { spansFromJson, spansFromProtobuf } from './otlp/trace.decode.ts';

export type { AttributeValue, OtlpStandIn, ReceivedSpan } from './otlp/otlp.types.ts';

export async function startOtlpStandIn(): Promise<OtlpStandIn> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const requests = new Map<string, number>();
  const waiters = new Set<() => void>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const type = (req.headers['content-type'] ?? '').split(';', 1)[0]!.trim();
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/traces' ||
        (type !== 'application/json' && type !== 'application/x-protobuf')
      ) {
        res.writeHead(404).end();
        return;
      }
      let received: ReceivedSpan[];
      try {
        const raw = Buffer.concat(chunks);
        const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
        received = type === 'application/json' ? spansFromJson(body.toString('utf8')) : spansFromProtobuf(body);
        bodies.push(body.toString('utf8'));
      } catch (err) {
        res
          .writeHead(400, { 'content-type': 'text/plain' })
          .end(`undecodable export request: ${(err as Error).message}`);
        return;
      }
      requests.set(type, (requests.get(type) ?? 0) + 1);
      spans.push(...received);
      if (type === 'application/json') res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      for (const wake of [...waiters]) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    requests,
    waitFor<T>(pick: (s: ReceivedSpan[]) => T | undefined, timeoutMs = 30_000) {
      return new Promise<T>((resolve, reject) => {
        const check = () => {
          let found: T | undefined;
          try {
            found = pick(spans);
          } catch (err) {
            done();
            reject(err);
            return;
          }
          if (found === undefined) return;
          done();
          resolve(found);
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(
              `the OTLP stand-in did not receive what was waited for within ${timeoutMs} ms (${spans.length} spans so far)`,
            ),
          );
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    reset() {
      spans.length = 0;
      bodies.length = 0;
      requests.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
