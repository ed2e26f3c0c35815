/**
 * Protocol Buffers' wire format, read without a schema: a message as its fields by number,
 * each value a varint or fixed number (bigint) or the bytes of a length-delimited field (a
 * string, bytes or a nested message; the caller knows which). Enough to read OTLP's trace
 * export requests without the .proto files, which the exporter does not ship.
 */

export type WireValue = bigint | Buffer;
export type WireMessage = Map<number, WireValue[]>;

function varint(buf: Buffer, at: number): [bigint, number] {
  let value = 0n;
  for (let shift = 0n; ; shift += 7n) {
    if (at >= buf.length) throw new Error('truncated varint');
    const byte = buf[at++]!;
    value |= BigInt(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return [value, at];
  }
}

export function readMessage(buf: Buffer): WireMessage {
  const fields: WireMessage = new Map();
  let at = 0;
  while (at < buf.length) {
    const [key, next] = varint(buf, at);
    at = next;
    const field = Number(key >> 3n);
    let value: WireValue;
    switch (Number(key & 7n)) {
      case 0:
        [value, at] = varint(buf, at);
        break;
      case 1:
        value = buf.readBigUInt64LE(at);
        at += 8;
        break;
      case 2: {
        const [length, start] = varint(buf, at);
        at = start + Number(length);
        if (at > buf.length) throw new Error('truncated field');
        value = buf.subarray(start, at);
        break;
      }
      case 5:
        value = BigInt(buf.readUInt32LE(at));
        at += 4;
        break;
      default:
        throw new Error(`unsupported wire type in field ${field}`);
    }
    const list = fields.get(field);
    if (list) list.push(value);
    else fields.set(field, [value]);
  }
  return fields;
}

/** The bytes fields of number `n` (repeated ones in order). */
export const bytesOf = (m: WireMessage, n: number): Buffer[] =>
  (m.get(n) ?? []).filter((v): v is Buffer => Buffer.isBuffer(v));
/** Nested messages of field `n`. */
export const messagesOf = (m: WireMessage, n: number): WireMessage[] => bytesOf(m, n).map(readMessage);
export const stringOf = (m: WireMessage, n: number): string | undefined => bytesOf(m, n)[0]?.toString('utf8');
export const numberOf = (m: WireMessage, n: number): bigint | undefined =>
  (m.get(n) ?? []).find((v): v is bigint => typeof v === 'bigint');
