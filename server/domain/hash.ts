/** SHA-256 of a string: hex for stored lookup keys (session ids, OAuth state), raw bytes for constant-time compares. */
import { createHash } from 'node:crypto';

export const sha256hex = (v: string): string => createHash('sha256').update(v).digest('hex');
export const sha256 = (v: string): Buffer => createHash('sha256').update(v).digest();
