import type { MikroORM } from '@mikro-orm/postgresql';

/**
 * A statement for the hot read paths (the thread list, the session lookup), sent as a named
 * prepared statement: PostgreSQL parses it once per connection, and with the pool's
 * `plan_cache_mode` (db/mikro-orm.config.ts) plans it once too. The ORM's own `execute`
 * writes the values into the text, a new statement to parse and plan on every call: on
 * the list, parsing and planning cost the database more than running the statement.
 */
export interface PreparedStatement {
  readonly name: string;
  /** The SQL with `$1…$n` placeholders. */
  readonly text: string;
}

/** SQL written with the ORM's `?` placeholders (and no other question mark) with PostgreSQL's `$1…$n`. */
export function numberedPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
/** A prepared statement from SQL written with the ORM's `?` placeholders (the SQL has no other question marks). */
export function preparedStatement(name: string, sql: string): PreparedStatement {
  return { name, text: numberedPlaceholders(sql) };
}

/** Runs a prepared statement and returns its rows. */
export type RunPrepared = <Row>(statement: PreparedStatement, values: unknown[]) => Promise<Row[]>;

/**
 * Prepared statements on the ORM's own connection pool (its type parsers, its size and
 * timeouts; asked for each call, so a reconnected ORM is followed).
 */
export function preparedRunner(orm: MikroORM): RunPrepared {
  const connection = orm.em.getConnection();
  return async <Row>(statement: PreparedStatement, values: unknown[]) => {
    const pool = await connection.getNativeClient();
    return (await pool.query({ name: statement.name, text: statement.text, values })).rows as Row[];
  };
}
