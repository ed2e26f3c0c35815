/**
 * createClient({ baseUrl }): the typed client of the API over /trpc, with end-to-end types
 * from the server's router (a type-only import: no server code reaches a client bundle).
 * Cookies travel with `credentials: 'include'`; the CSRF token is fetched from
 * auth.session on the first state-changing call (and again after a CSRF_FAILED or a
 * sign-in), and sent as X-CSRF-Token. Errors surface as ApiError carrying the spec's code.
 */
import { createTRPCClient, httpLink, TRPCClientError, type TRPCLink } from '@trpc/client';
import { observable } from '@trpc/server/observable';
import type { AppRouter } from '../server/trpc/routers/index.ts';
import { isErrorCode, type ErrorCode, type ValidationIssue } from './errors.ts';

export type { AppRouter };

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly requestId: string,
    readonly httpStatus: number,
    readonly issues: ValidationIssue[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export function isApiError(err: unknown, code?: ErrorCode): err is ApiError {
  return err instanceof ApiError && (code === undefined || err.code === code);
}

interface ErrorData {
  appCode?: unknown;
  requestId?: unknown;
  httpStatus?: unknown;
  issues?: unknown;
}

/** Converts whatever the tRPC client threw into an ApiError of the closed set. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof TRPCClientError && err.cause instanceof ApiError) return err.cause;
  if (err instanceof TRPCClientError) {
    const data = (err.data ?? {}) as ErrorData;
    const code = isErrorCode(data.appCode) ? data.appCode : 'INTERNAL_ERROR';
    return new ApiError(code, err.message, String(data.requestId ?? ''), Number(data.httpStatus ?? 500), Array.isArray(data.issues) ? (data.issues as ValidationIssue[]) : []);
  }
  return new ApiError('SERVICE_UNAVAILABLE', 'The service could not be reached.', '', 0);
}

export interface ClientOptions {
  /** Where the API lives, e.g. https://api.example.com (no trailing /trpc). */
  baseUrl: string;
  /** A fetch implementation (a cookie-keeping one outside browsers). */
  fetch?: typeof fetch;
  /** Extra headers on every call; outside browsers set `Origin` to the web origin here. */
  headers?: Record<string, string>;
}

export function createClient(opts: ClientOptions) {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const doFetch: typeof fetch = opts.fetch ?? ((input, init) => fetch(input, { ...init, credentials: 'include' }));
  let csrfToken: string | undefined;

  const loadCsrfToken = async () => {
    const res = await doFetch(`${base}/trpc/auth.session`, { headers: opts.headers });
    const body = (await res.json()) as { result?: { data?: { csrfToken?: string; authenticated?: boolean } } };
    csrfToken = body.result?.data?.authenticated ? body.result.data.csrfToken : undefined;
    return csrfToken;
  };

  /** Errors become ApiError; a mutation refused for CSRF is retried once with a fresh token. */
  const errorLink: TRPCLink<AppRouter> = () => ({ op, next }) =>
    observable((observer) => {
      let retried = false;
      const run = (): { unsubscribe(): void } =>
        next(op).subscribe({
          next: (v) => observer.next(v),
          complete: () => observer.complete(),
          error: (err) => {
            const apiError = toApiError(err);
            if (op.type === 'mutation' && apiError.code === 'CSRF_FAILED' && !retried) {
              retried = true;
              csrfToken = undefined;
              loadCsrfToken().then(() => { sub = run(); }, () => observer.error(apiError as never));
              return;
            }
            observer.error(apiError as never);
          },
        });
      let sub = run();
      return () => sub.unsubscribe();
    });

  const client = createTRPCClient<AppRouter>({
    links: [
      errorLink,
      httpLink({
        url: `${base}/trpc`,
        fetch: doFetch,
        headers: async ({ op }) => {
          const headers: Record<string, string> = { ...opts.headers };
          if (op.type === 'mutation' && op.path !== 'auth.logout' && op.path !== 'analytics.event') {
            const token = csrfToken ?? (await loadCsrfToken());
            if (token) headers['X-CSRF-Token'] = token;
          }
          return headers;
        },
      }),
    ],
  });
  return withApiErrors(client);
}

/** Makes every query/mutate of the client reject with an ApiError (tRPC wraps link errors). */
function withApiErrors<T extends object>(target: T): T {
  return new Proxy(target, {
    get(obj, key) {
      const value = Reflect.get(obj, key) as unknown;
      if (key === 'query' || key === 'mutate') {
        return (...args: unknown[]) => (value as (...a: unknown[]) => Promise<unknown>)(...args).catch((err: unknown) => {
          throw toApiError(err);
        });
      }
      return (typeof value === 'object' || typeof value === 'function') && value !== null ? withApiErrors(value as object) : value;
    },
  });
}

export type ApiClient = ReturnType<typeof createClient>;
