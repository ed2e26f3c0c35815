/**
 * The Gmail stand-in's public types: fault specs, recorded requests, notifications, start
 * options and the control API a test drives it with.
 */
import type { NewMessage, RawMessageOptions, SeedOptions, StandInMessage, WatchRecord } from './mailbox.types.ts';
import type { QuotaSetting } from './quota.model.ts';

export const DEFAULT_MAILBOX = 'alice@example.com';

export type FaultEndpoint =
  | 'profile'
  | 'labels.get'
  | 'messages.list'
  | 'messages.get'
  | 'attachments.get'
  | 'threads.get'
  | 'history.list'
  | 'watch'
  | 'stop'
  | 'discovery'
  | '*';

export interface FaultSpec {
  endpoint: FaultEndpoint;
  /** HTTP status of the error answer. Ignored for `hang`/`reset`; for `garbage` defaults to 200 when 0. */
  status: number;
  /** errors[0].reason; defaults per status (429 -> rateLimitExceeded, 404 -> notFound, 500 -> backendError, ...). */
  reason?: string;
  message?: string;
  /** How many matching calls fail (default 1; Infinity for "until clearFaults()"). */
  times?: number;
  /** Only calls whose path contains this (e.g. one message's id). */
  pathIncludes?: string;
  /** Let this many matching calls pass before failing. */
  afterCalls?: number;
  /** Never answer (until close()); for client timeout tests. */
  hang?: boolean;
  /** Answer `status || 200` with a non-JSON body (this string, or a default) labelled application/json. */
  garbage?: boolean | string;
  /** Destroy the socket without answering (client sees ECONNRESET / "socket hang up"). */
  reset?: boolean;
  /** The call takes effect as usual but its answer is sent this many ms later; `status` is ignored. */
  delayMs?: number;
  /** Adds a `Retry-After` header. */
  retryAfterSeconds?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  /** Endpoint key, e.g. 'messages.get', or 'unknown'. */
  endpoint: string;
  at: number;
}

export interface InboxMessage extends StandInMessage {
  unread: boolean;
}

/** Pub/Sub-style push notification payload (what Gmail publishes to the watch topic). */
export interface GmailNotification {
  emailAddress: string;
  historyId: number;
  topicName: string;
}

export interface GmailStandIn {
  /** Root URL with trailing slash, e.g. `http://127.0.0.1:54321/`; pass as `rootUrl`. */
  readonly url: string;
  setToken(token: string, email: string): void;

  addMessage(email: string, partial?: NewMessage): StandInMessage;
  /**
   * Stores raw RFC 822 bytes (a string: its UTF-8 bytes) and serves them as Gmail would: the
   * headers as sent (unfolded, not decoded), the MIME tree with transfer-decoded leaves in their
   * own charset, real attachment bytes (see gmail/raw-message.ts). The control API's from,
   * subject, snippet and bodyText are decoded conveniences for search and assertions.
   */
  addRawMessage(email: string, raw: Buffer | string, opts?: RawMessageOptions): StandInMessage;
  /** A `SENT`-only message from the mailbox owner to the last sender in `threadId`. */
  addSentReply(email: string, threadId: string, partial?: NewMessage): StandInMessage;
  deleteMessage(email: string, id: string): void;
  setRead(email: string, id: string, read: boolean): void;
  archive(email: string, id: string): void;
  moveToInbox(email: string, id: string): void;
  /** Generic label change (e.g. STARRED, TRASH, SPAM); one history record per kind of change. */
  modifyLabels(email: string, id: string, change: { add?: string[]; remove?: string[] }): void;
  /** Adds `count` received messages (+ SENT replies unless `sentReplies: false`). Returns all created messages, oldest first. */
  seed(email: string, count: number, opts?: SeedOptions): StandInMessage[];

  /** Messages carrying INBOX, newest first (same order as messages.list?labelIds=INBOX). Copies. */
  inbox(email: string): InboxMessage[];
  /** All messages of the mailbox (any label), newest first. Copies. */
  messages(email: string): StandInMessage[];
  getMessage(email: string, id: string): StandInMessage | undefined;
  /** The mailbox's current historyId. */
  historyId(email: string): number;
  /** history.list with startHistoryId below the current historyId answers 404 from now on (until a later expireHistory moves the floor again). */
  expireHistory(email: string): void;

  injectFault(fault: FaultSpec): void;
  clearFaults(): void;
  setLatency(ms: number): void;
  /** History label records without the message's label snapshot (only the labels added or removed), as Gmail's may come. */
  setDeltaOnlyLabels(on: boolean): void;
  /**
   * Enforces the provider's per-user quota, charged on arrival to the mailbox the bearer token
   * belongs to (all its tokens together; an unknown token alone) in a moving window:
   * - `{ unitsPerWindow, windowMs = 60_000, profile = '2026' }`: Google's 2026 limits
   *   (messages.get 20, threads.get 40, messages.list 5, history.list 2, ...; the tables are
   *   `QUOTA_COSTS` in gmail/quota.model.ts); `unitsPerWindow: Infinity` observes without refusing;
   * - a number: units per moving second at the legacy costs (messages.get 5, threads.get 10, ...);
   * - null: none (nothing is charged or observed).
   * A call that would pass the limit is refused 429 `rateLimitExceeded` with a Retry-After of the
   * seconds until enough of the window frees, is not charged, and counts as calls['quota-refused'].
   * Each call starts a fresh window for every user (and a fresh `quotaPeak`).
   */
  setQuota(quota: QuotaSetting): void;
  /** The most units `user` (a mailbox address, or an unknown token) was charged within any one window since setQuota or resetCounters: at most the limit, as refused calls are not charged. */
  quotaPeak(user: string): number;
  /** The units charged to `user` since resetCounters (across setQuota calls). */
  quotaSpent(user: string): number;
  /** The units charged per endpoint key (e.g. 'messages.get'), all users, since resetCounters. A copy. */
  quotaUnitsByEndpoint(): Record<string, number>;

  /**
   * On: each threads.get answer's bytes are kept (per mailbox, thread, format and metadata headers)
   * and sent again while the mailbox's history id has not moved; off: none kept, those kept
   * forgotten. For benchmarks: making a thread answer of 27 MB takes the stand-in ~200 ms of the
   * event loop it shares with the bench, each time it is asked for.
   */
  keepThreadAnswers(on: boolean): void;
  /**
   * The most requests of `user` (a mailbox address, or an unknown token; of one endpoint key such as
   * 'threads.get' when given) the stand-in held at once since resetCounters: each from its arrival
   * until its answer was handed to the connection, or the connection closed (its latency included).
   */
  inFlightPeak(user: string, endpoint?: string): number;
  /** Per-endpoint call counters (faulted and 401 calls count too). Known keys start at 0. */
  readonly calls: Record<string, number>;
  readonly requests: RecordedRequest[];
  /** Clears calls, requests, the in-flight peaks (to what is held now) and the quota observations (not the quota's window: the provider still counts what it holds). */
  resetCounters(): void;

  watches(email: string): WatchRecord[];
  /** Called after every history change of a mailbox with an active, unexpired watch whose label filter matches. Returns unsubscribe. */
  onNotification(listener: (n: GmailNotification) => void): () => void;

  close(): Promise<void>;
}

export interface GmailStandInOptions {
  authorize?: (accessToken: string) => string | null;
  latencyMs?: number;
  /** Seed for generated ids' low bits, history id gaps and `seed()` content (default 1). */
  seed?: number;
}
