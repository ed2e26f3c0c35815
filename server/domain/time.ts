/** A timestamp from the database (Date or text) as the API's ISO 8601 UTC string. */
export const toIso = (v: unknown): string => new Date(v as string | Date).toISOString();
