/** Building blocks shared by the API schemas. */
import { z } from 'zod';

/** ISO 8601 UTC timestamp with milliseconds, as every timestamp of the API. */
export const timestamp = z.iso.datetime({ precision: 3 });
/** An input timestamp PostgreSQL can store: ISO 8601 allows year 0000, timestamptz refuses it (500). */
export const inputTimestamp = timestamp.refine((v) => !v.startsWith('0000-'), { message: 'year 0000 does not exist' });
export const uuid = z.uuid();

/**
 * Text as PostgreSQL can store it: no NUL character (refused in text and jsonb alike) and no
 * unpaired UTF-16 surrogate (refused in jsonb, replaced by U+FFFD in text). Either used to
 * reach the database and fail there (500); now it is an input error (invalid_format).
 */
export const STORABLE_TEXT = /^(?:[^\0\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/;
export const text = () => z.string().regex(STORABLE_TEXT);

/**
 * A whole number from a query string or a JSON number. Written as a union + pipe rather than
 * `z.number()` because trpc-to-openapi mutates plain number schemas to coerce (which would
 * then let `/trpc` accept strings, and `?x=1e1` or `?x=0x10` pass). Its static type is
 * number in and out: the string branch exists for REST query strings only, so the typed
 * client (which sends JSON) is asked for a number, not `number | string`.
 */
export function queryInt(min: number, max: number): z.ZodType<number, number> {
  return z
    .union([
      z.int(),
      z
        .string()
        .regex(/^-?(0|[1-9]\d{0,15})$/)
        .transform(Number),
    ])
    .pipe(z.int().min(min).max(max)) as z.ZodType<number, string | number> as z.ZodType<number, number>;
}

/** JSON body boolean that trpc-to-openapi cannot turn into a coercing one. */
export const bodyLiteralTrue = z.literal(true);
