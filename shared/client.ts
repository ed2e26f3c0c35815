/**
 * createClient({ baseUrl }): the typed client of the API over /trpc, with end-to-end types
 * from the server's router (router.ts: a type-only import; the built package carries a
 * generated copy). Cookies travel with `credentials: 'include'`; the CSRF token is fetched
 * from auth.session on the first state-changing call (and again after a CSRF_FAILED or a
 * sign-in), and sent as X-CSRF-Token. Errors surface as ApiError carrying the spec's code,
 * or as its NetworkError (code NETWORK_ERROR) when no answer came back at all.
 */
import {
  createTRPCClient,
  httpLink,
  httpSubscriptionLink,
  splitLink,
  TRPCClientError,
  type TRPCClient,
  type TRPCLink,
} from '@trpc/client';
import { observable } from '@trpc/server/observable';
import { isErrorCode, type ErrorCode, type ValidationIssue } from './errors.ts';
import type { AppRouter } from './router.ts';

export type { AppRouter };

/** The codes a client sees: the API's closed set, plus NETWORK_ERROR (no answer from the API). */
export type ClientErrorCode = ErrorCode | 'NETWORK_ERROR';

export class ApiError extends Error {
  readonly code: ClientErrorCode;
  readonly requestId: string;
  readonly httpStatus: number;
  readonly issues: ValidationIssue[];
  constructor(
    code: ClientErrorCode,
    message: string,
    requestId: string,
    httpStatus: number,
    issues: ValidationIssue[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.requestId = requestId;
    this.httpStatus = httpStatus;
    this.issues = issues;
  }
}

/**
 * The API could not be reached or the connection broke before an answer came back (refused,
 * reset, DNS, offline): nothing is known about whether a mutation ran. `cause` is what fetch threw.
 */
export class NetworkError extends ApiError {
  declare readonly code: 'NETWORK_ERROR';
  constructor(message = 'The service could not be reached.', options?: { cause?: unknown }) {
    super('NETWORK_ERROR', message, '', 0);
    this.name = 'NetworkError';
    if (options && 'cause' in options) this.cause = options.cause;
  }
}

export function isApiError<C extends ClientErrorCode = ClientErrorCode>(
  err: unknown,
  code?: C,
): err is ApiError & { readonly code: C } {
  return err instanceof ApiError && (code === undefined || err.code === code);
}

export function isNetworkError(err: unknown): err is NetworkError {
  return err instanceof NetworkError;
}

/** fetch rejects with a TypeError, and only then, when no response came (Fetch standard, every runtime). */
function isFetchFailure(err: unknown): boolean {
  return err instanceof TypeError || (err instanceof Error && err.name === 'TypeError');
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
  if (err instanceof TRPCClientError && err.shape === undefined && isFetchFailure(err.cause)) {
    return new NetworkError(undefined, { cause: err.cause });
  }
  if (err instanceof TRPCClientError) {
    const data = (err.data ?? {}) as ErrorData;
    const code = isErrorCode(data.appCode) ? data.appCode : 'INTERNAL_ERROR';
    return new ApiError(
      code,
      err.message,
      String(data.requestId ?? ''),
      Number(data.httpStatus ?? 500),
      Array.isArray(data.issues) ? (data.issues as ValidationIssue[]) : [],
    );
  }
  if (isFetchFailure(err)) return new NetworkError(undefined, { cause: err });
  return new ApiError('SERVICE_UNAVAILABLE', 'The service could not be reached.', '', 0);
}

export interface ClientOptions {
  /** Where the API lives, e.g. https://api.example.com (no trailing /trpc). */
  baseUrl: string;
  /** A fetch implementation (a cookie-keeping one outside browsers). */
  fetch?: typeof fetch;
  /** Extra headers on every call; outside browsers set `Origin` to the web origin here. */
  headers?: Record<string, string>;
  /**
   * The EventSource class `mail.events` subscribes with (browsers have one; Node 24 only with
   * `--experimental-eventsource`, or pass a polyfill that sends the session cookie).
   */
  EventSource?: typeof EventSource;
}

/** The typed client: `api.<router>.<procedure>.query(input)` / `.mutate(input)`. */
export type ApiClient = TRPCClient<AppRouter>;

export function createClient(opts: ClientOptions): ApiClient {
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
  const errorLink: TRPCLink<AppRouter> =
    () =>
    ({ op, next }) =>
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
                loadCsrfToken().then(
                  () => {
                    sub = run();
                  },
                  () => observer.error(apiError as never),
                );
                return;
              }
              observer.error(apiError as never);
            },
          });
        let sub = run();
        return () => sub.unsubscribe();
      });

  // Subscriptions (mail.events) go over Server-Sent Events, with the session cookie; the rest over fetch.
  const subscriptions = httpSubscriptionLink<AppRouter, typeof EventSource>({
    url: `${base}/trpc`,
    ...(opts.EventSource ? { EventSource: opts.EventSource } : {}),
    eventSourceOptions: { withCredentials: true },
  });
  const client = createTRPCClient<AppRouter>({
    links: [
      errorLink,
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: subscriptions,
        false: httpLink({
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
        return (...args: unknown[]) =>
          (value as (...a: unknown[]) => Promise<unknown>)(...args).catch((err: unknown) => {
            throw toApiError(err);
          });
      }
      return (typeof value === 'object' || typeof value === 'function') && value !== null
        ? withApiErrors(value as object)
        : value;
    },
  });
}
