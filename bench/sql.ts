/** MikroORM's `?` placeholders as pg's `$n` (the service's SQL has no other question marks). */
export function forPg(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
