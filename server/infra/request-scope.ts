/**
 * The id of the request being handled, wherever in its async call tree code runs: set by
 * the request-id middleware, read by the logger's mixin and the tRPC error formatter.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const store = new AsyncLocalStorage<string>();

export const currentRequestId = (): string | undefined => store.getStore();

export function runWithRequestId<T>(id: string, fn: () => T): T {
  return store.run(id, fn);
}
