/** Building blocks shared by the API schemas. */
import { z } from 'zod';

/** ISO 8601 UTC timestamp with milliseconds, as every timestamp of the API. */
export const timestamp = z.iso.datetime({ precision: 3 });
export const uuid = z.uuid();

/**
 * A whole number from a query string or a JSON number. Written as a union + pipe rather than
 * `z.number()` because trpc-to-openapi mutates plain number schemas to coerce (which would
 * then let `/trpc` accept strings, and `?x=1e1` or `?x=0x10` pass).
 */
export function queryInt(min: number, max: number) {
  return z
    .union([z.int(), z.string().regex(/^-?(0|[1-9]\d{0,15})$/).transform(Number)])
    .pipe(z.int().min(min).max(max));
}

/** JSON body boolean that trpc-to-openapi cannot turn into a coercing one. */
export const bodyLiteralTrue = z.literal(true);
