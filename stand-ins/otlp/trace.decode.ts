/**
 * OTLP trace export requests (ExportTraceServiceRequest) in either encoding the exporters
 * send, `http/json` or `http/protobuf`, as ReceivedSpans. Field numbers are those of
 * opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto.
 */
import type { AttributeValue, ReceivedSpan } from './otlp.types.ts';
import { bytesOf, messagesOf, numberOf, readMessage, stringOf, type WireMessage } from './protobuf.wire.ts';

// ---- protobuf ----

function anyValue(m: WireMessage): AttributeValue {
  if (m.has(1)) return stringOf(m, 1)!;
  if (m.has(2)) return numberOf(m, 2) === 1n;
  if (m.has(3)) return Number(BigInt.asIntN(64, numberOf(m, 3)!));
  if (m.has(4)) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(numberOf(m, 4)!);
    return b.readDoubleLE(0);
  }
  if (m.has(5)) return messagesOf(messagesOf(m, 5)[0]!, 1).map(anyValue);
  if (m.has(6)) return attributes(messagesOf(m, 6)[0]!, 1);
  if (m.has(7)) return bytesOf(m, 7)[0]!.toString('base64');
  return null;
}

function attributes(m: WireMessage, n: number): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of messagesOf(m, n)) out[stringOf(kv, 1) ?? ''] = kv.has(2) ? anyValue(messagesOf(kv, 2)[0]!) : null;
  return out;
}

const hex = (m: WireMessage, n: number) => bytesOf(m, n)[0]?.toString('hex') || undefined;

export function spansFromProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of messagesOf(readMessage(body), 1)) {
    const resource = rs.has(1) ? attributes(messagesOf(rs, 1)[0]!, 1) : {};
    for (const ss of messagesOf(rs, 2)) {
      const scope = ss.has(1) ? (stringOf(messagesOf(ss, 1)[0]!, 1) ?? '') : '';
      for (const s of messagesOf(ss, 2)) {
        const status = s.has(15) ? messagesOf(s, 15)[0]! : new Map();
        out.push({
          traceId: hex(s, 1) ?? '',
          spanId: hex(s, 2) ?? '',
          parentSpanId: hex(s, 4),
          name: stringOf(s, 5) ?? '',
          kind: Number(numberOf(s, 6) ?? 0n),
          attributes: attributes(s, 9),
          events: messagesOf(s, 11).map((e) => ({ name: stringOf(e, 2) ?? '', attributes: attributes(e, 3) })),
          links: messagesOf(s, 13).map((l) => ({
            traceId: hex(l, 1) ?? '',
            spanId: hex(l, 2) ?? '',
            attributes: attributes(l, 4),
          })),
          status: { code: Number(numberOf(status, 3) ?? 0n), message: stringOf(status, 2) },
          scope,
          resource,
          startNs: numberOf(s, 7) ?? 0n,
          endNs: numberOf(s, 8) ?? 0n,
        });
      }
    }
  }
  return out;
}

// ---- JSON ----

interface JsonKeyValue {
  key: string;
  value?: JsonAnyValue;
}
interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: JsonAnyValue[] };
  kvlistValue?: { values?: JsonKeyValue[] };
  bytesValue?: string;
}

function jsonValue(v: JsonAnyValue | undefined): AttributeValue {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(jsonValue);
  if (v.kvlistValue) return jsonAttributes(v.kvlistValue.values);
  if (v.bytesValue !== undefined) return v.bytesValue;
  return null;
}

const jsonAttributes = (kvs: JsonKeyValue[] | undefined): Record<string, AttributeValue> =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: JsonKeyValue[];
  events?: { name: string; attributes?: JsonKeyValue[] }[];
  links?: { traceId: string; spanId: string; attributes?: JsonKeyValue[] }[];
  status?: { code?: number; message?: string };
}

export function spansFromJson(text: string): ReceivedSpan[] {
  const body = JSON.parse(text) as {
    resourceSpans?: {
      resource?: { attributes?: JsonKeyValue[] };
      scopeSpans?: { scope?: { name?: string }; spans?: JsonSpan[] }[];
    }[];
  };
  return (body.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId || undefined,
        name: s.name,
        kind: s.kind ?? 0,
        attributes: jsonAttributes(s.attributes),
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: jsonAttributes(e.attributes) })),
        links: (s.links ?? []).map((l) => ({
          traceId: l.traceId,
          spanId: l.spanId,
          attributes: jsonAttributes(l.attributes),
        })),
        status: { code: s.status?.code ?? 0, message: s.status?.message },
        scope: ss.scope?.name ?? '',
        resource: jsonAttributes(rs.resource?.attributes),
        startNs: BigInt(s.startTimeUnixNano ?? 0),
        endNs: BigInt(s.endTimeUnixNano ?? 0),
      })),
    ),
  );
}
