/**
 * The client a request counts against in the rate limits (runtime contract 4a). The address
 * itself comes from Koa: the socket's peer, or with TRUST_PROXY the X-Forwarded-For entry the
 * trusted proxies appended (Koa's maxIpsCount = TRUST_PROXY_HOPS: that many entries from the
 * right, never one the client wrote). Here it becomes a bounded key: an IPv4 address as is,
 * an IPv6 address by its /64 (one subscriber's whole prefix is one client), and anything that
 * is not an address hashed.
 */
import ipaddr from 'ipaddr.js';
import { sha256hex } from '../domain/hash.ts';

export function clientKey(address: string | undefined): string {
  const raw = (address ?? '').trim();
  if (ipaddr.IPv4.isValidFourPartDecimal(raw)) return raw;
  const v6 = raw.replace(/^\[|\]$/g, '');
  if (ipaddr.IPv6.isValid(v6)) {
    const parsed = ipaddr.IPv6.parse(v6);
    if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
    const prefix = parsed.parts
      .slice(0, 4)
      .map((p) => p.toString(16))
      .join(':');
    return `${prefix}::/64`;
  }
  return `unparsed:${sha256hex(raw).slice(0, 32)}`;
}
