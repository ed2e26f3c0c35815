/** How a repository of the domain runs its statements. */

/** What runs a statement: a forked EntityManager (inside its transaction, if any) or a connection. */
export interface Sql {
  execute(query: string, params?: unknown[], method?: 'all' | 'get' | 'run'): Promise<unknown>;
}

/** The rows a statement returns. */
export const select = async <T>(em: Sql, query: string, params: unknown[] = []): Promise<T[]> =>
  (await em.execute(query, params)) as T[];
