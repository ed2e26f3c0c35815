/**
 * Statements whose values travel as bind parameters. The ORM's `execute` writes every value
 * into the SQL text, escaping it character by character in JavaScript: for a sync batch's rows
 * (one JSON parameter, up to megabytes with bodies) that holds the event loop long enough to
 * stall every other request. Here the values go to PostgreSQL as they are, on the transaction's
 * connection when there is one (the ORM's Kysely transaction), else on the ORM's pool. The
 * SQL is written with the ORM's `?` placeholders and has no other question mark.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery, type ControlledTransaction, type Kysely } from 'kysely';
import { numberedPlaceholders } from './prepared-sql.ts';

export async function executeBound<Row>(em: EntityManager, sql: string, params: unknown[]): Promise<Row[]> {
  const query = CompiledQuery.raw(numberedPlaceholders(sql), params);
  const runner: ControlledTransaction<unknown> | Kysely<unknown> =
    em.getTransactionContext<ControlledTransaction<unknown>>() ?? em.getConnection().getClient();
  return (await runner.executeQuery(query)).rows as Row[];
}
