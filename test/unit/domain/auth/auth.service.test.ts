/**
 * The auth service's rules, with in-memory fakes and an injected clock: the state is stored
 * hashed with the PKCE verifier and the TTL; the callback's checks run in the contract's order
 * (state, expiry, browser, provider error, code, exchange, scope, identity); disconnect and
 * deletion stop the watch before revoking and remove the data whatever the provider says.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Account, OAuthState, Session, SyncState } from '../../../../db/entities/index.ts';
import {
  createAuthService,
  SignInFailure,
  type MailWatchControl,
} from '../../../../server/domain/auth/auth.service.ts';
import type { CredentialsService } from '../../../../server/domain/auth/credentials.service.ts';
import { createLogger } from '../../../../server/infra/logger.ts';
import { MAIL_SCOPE, type OAuthProvider, type ProviderTokens } from '../../../../server/providers/oauth.ts';

const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
const silent = createLogger({ level: 'silent' });
const T0 = new Date('2026-11-20T10:00:00.000Z');

interface StateRow {
  browser_hash: string;
  code_verifier: string;
  expires_at: Date;
}

function fakeWorld(
  opts: {
    tokens?: Partial<ProviderTokens>;
    storedRefresh?: string | null;
    failExchange?: boolean;
    failUserinfo?: boolean;
    failRevoke?: boolean;
    failStop?: boolean;
  } = {},
) {
  const log: string[] = [];
  const states = new Map<string, StateRow>();
  const created: { entity: unknown; data: Record<string, unknown> }[] = [];
  let now = T0;
  const tx = {
    upsert: async (entity: unknown, data: Record<string, unknown>) => {
      log.push(`upsert ${entity === Account ? 'Account' : entity === SyncState ? 'SyncState' : '?'}`);
      return { id: 'acc-1', ...data };
    },
    nativeDelete: async (entity: unknown, where: unknown) =>
      void log.push(
        `delete ${entity === Session ? 'Session' : entity === Account ? 'Account' : entity === OAuthState ? 'OAuthState' : '?'} ${JSON.stringify(where)}`,
      ),
    nativeUpdate: async (entity: unknown, where: unknown, data: unknown) =>
      void log.push(
        `update ${entity === SyncState ? 'SyncState' : entity === Account ? 'Account' : '?'} ${JSON.stringify(where)} ${JSON.stringify(data)}`,
      ),
    // The sync-state repository's statements, named by what they do.
    execute: async (sql: string, params: unknown[]) => {
      const what =
        /^insert into sync_states \(account_id\) values \(\?\) on conflict \(account_id\) do update\s+set watch_failures = 0, watch_retry_at = null, next_sweep_at = null, no_mailbox_at = null$/.test(
          sql,
        )
          ? 'create SyncState'
          : /^update sync_states set watch_expires_at = null, watch_renewed_at = null where account_id = \?$/.test(sql)
            ? 'clear SyncState watch'
            : `? ${sql}`;
      log.push(`${what} ${JSON.stringify(params)}`);
    },
  };
  const em = {
    ...tx,
    create: (entity: unknown, data: Record<string, unknown>) => void created.push({ entity, data }),
    flush: async () => {
      for (const { entity, data } of created) {
        if (entity === OAuthState)
          states.set(data.id as string, {
            browser_hash: data.browserHash as string,
            code_verifier: data.codeVerifier as string,
            expires_at: data.expiresAt as Date,
          });
      }
    },
    getConnection: () => ({
      execute: async (_sql: string, params: unknown[]) => {
        const row = states.get(params[0] as string);
        states.delete(params[0] as string);
        return row ? [row] : [];
      },
    }),
    transactional: async <T>(fn: (t: typeof tx) => Promise<T>) => {
      log.push('begin');
      const out = await fn(tx);
      log.push('commit');
      return out;
    },
  } as unknown as EntityManager;

  const oauth: OAuthProvider = {
    authorizationUrl: ({ state, codeChallenge }) =>
      `https://idp.test/auth?state=${state}&code_challenge=${codeChallenge}`,
    exchangeCode: async ({ code, codeVerifier }) => {
      log.push(`exchange ${code} ${codeVerifier.length}`);
      if (opts.failExchange) throw new Error('invalid_grant');
      return { accessToken: 'at', refreshToken: 'rt', scope: `openid email ${MAIL_SCOPE}`, ...opts.tokens };
    },
    userinfo: async () => {
      log.push('userinfo');
      if (opts.failUserinfo) throw new Error('userinfo answered HTTP 500');
      return { sub: 'sub-1', email: 'a@example.com' };
    },
    revoke: async (token) => {
      log.push(`revoke ${token}`);
      if (opts.failRevoke) throw new Error('revoke answered HTTP 500');
    },
    authorisedClient: () => {
      throw new Error('not used');
    },
  };
  const credentials: CredentialsService = {
    store: async (_em, id, tokens) => void log.push(`store ${id} ${tokens.refreshToken ?? '-'}`),
    refreshToken: async () => (opts.storedRefresh === undefined ? 'stored-rt' : opts.storedRefresh),
    client: async () => {
      throw new Error('not used');
    },
    rethrowIfRevoked: async () => {},
    remove: async (_em, id) => void log.push(`remove credentials ${id}`),
    rotateAll: async () => ({ rotated: 0, current: 0, unreadable: 0 }),
  };
  const watch: MailWatchControl = {
    register: async (id) => void log.push(`watch register ${id}`),
    stop: async (_em, id) => {
      log.push(`watch stop ${id}`);
      if (opts.failStop) throw new Error('stop failed');
    },
  };
  const auth = createAuthService({ oauth, credentials, log: silent, stateTtlSeconds: 600, watch, clock: () => now });
  return { auth, em, log, states, setNow: (d: Date) => void (now = d) };
}

async function started(world: ReturnType<typeof fakeWorld>) {
  const { redirectUrl, browserNonce } = await world.auth.startSignIn(world.em);
  const state = new URL(redirectUrl).searchParams.get('state')!;
  return { state, browserNonce, challenge: new URL(redirectUrl).searchParams.get('code_challenge')! };
}

async function failure(p: Promise<unknown>, reason: string) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof SignInFailure, `a SignInFailure, got ${String(err)}`);
    assert.equal(err.reason, reason);
    return true;
  });
}

describe('startSignIn', () => {
  it('stores the state hashed, bound to the browser nonce, with the PKCE verifier and the TTL', async () => {
    const world = fakeWorld();
    const { state, browserNonce, challenge } = await started(world);
    const row = world.states.get(sha256(state));
    assert.ok(row, 'stored under sha256(state)');
    assert.ok(!world.states.has(state), 'never under the raw state');
    assert.equal(row.browser_hash, sha256(browserNonce));
    assert.equal(
      createHash('sha256').update(row.code_verifier).digest('base64url'),
      challenge,
      'S256 challenge of the stored verifier',
    );
    assert.equal(row.expires_at.getTime() - T0.getTime(), 600_000);
    assert.ok(
      world.log.some((l) => l.startsWith('delete OAuthState')),
      'expired states are swept',
    );
  });
});

describe('completeSignIn', () => {
  it('succeeds with a fresh state from the same browser: exchange, scope, identity, stored, watch registered', async () => {
    const world = fakeWorld();
    const { state, browserNonce } = await started(world);
    const user = await world.auth.completeSignIn(world.em, { state, code: 'c0de', browserNonce });
    assert.deepEqual(user, { accountId: 'acc-1', email: 'a@example.com' });
    assert.deepEqual(
      world.log.filter((l) => !l.startsWith('delete OAuthState')),
      [
        'exchange c0de 43',
        'userinfo',
        'begin',
        'upsert Account',
        'store acc-1 rt',
        'create SyncState ["acc-1"]',
        'commit',
        'watch register acc-1',
      ],
    );
    await failure(
      world.auth.completeSignIn(world.em, { state, code: 'c0de', browserNonce }),
      'unknown or reused state',
    );
  });

  it('the state expires exactly at its TTL (clock injected)', async () => {
    const early = fakeWorld();
    const a = await started(early);
    early.setNow(new Date(T0.getTime() + 600_000 - 1));
    assert.ok(await early.auth.completeSignIn(early.em, { state: a.state, code: 'c', browserNonce: a.browserNonce }));

    const late = fakeWorld();
    const b = await started(late);
    late.setNow(new Date(T0.getTime() + 600_000));
    await failure(
      late.auth.completeSignIn(late.em, { state: b.state, code: 'c', browserNonce: b.browserNonce }),
      'expired state',
    );
    assert.ok(!late.log.some((l) => l.startsWith('exchange')));
  });

  it('checks in order, consuming the state whatever the outcome', async () => {
    const cases: [
      string,
      Parameters<typeof fakeWorld>[0],
      (s: { state: string; browserNonce: string }) => Record<string, string | undefined>,
    ][] = [
      ['missing state', {}, () => ({ code: 'c' })],
      ['unknown or reused state', {}, (s) => ({ state: `${s.state}x`, code: 'c', browserNonce: s.browserNonce })],
      ['state presented by another browser', {}, (s) => ({ state: s.state, code: 'c', browserNonce: 'other' })],
      ['state presented by another browser', {}, (s) => ({ state: s.state, code: 'c' })],
      [
        'provider returned an error',
        {},
        (s) => ({ state: s.state, code: 'c', error: 'access_denied', browserNonce: s.browserNonce }),
      ],
      ['missing code', {}, (s) => ({ state: s.state, browserNonce: s.browserNonce })],
      [
        'code exchange failed',
        { failExchange: true },
        (s) => ({ state: s.state, code: 'c', browserNonce: s.browserNonce }),
      ],
      [
        'mail scope not granted',
        { tokens: { scope: 'openid email' } },
        (s) => ({ state: s.state, code: 'c', browserNonce: s.browserNonce }),
      ],
      ['userinfo failed', { failUserinfo: true }, (s) => ({ state: s.state, code: 'c', browserNonce: s.browserNonce })],
      [
        'no refresh token granted',
        { tokens: { refreshToken: undefined }, storedRefresh: null },
        (s) => ({ state: s.state, code: 'c', browserNonce: s.browserNonce }),
      ],
    ];
    for (const [reason, opts, query] of cases) {
      const world = fakeWorld(opts);
      const s = await started(world);
      await failure(world.auth.completeSignIn(world.em, query(s)), reason);
      if (reason !== 'missing state' && reason !== 'unknown or reused state')
        assert.equal(world.states.size, 0, `${reason}: state consumed`);
      const exchanged = world.log.some((l) => l.startsWith('exchange'));
      assert.equal(
        exchanged,
        ['code exchange failed', 'mail scope not granted', 'userinfo failed', 'no refresh token granted'].includes(
          reason,
        ),
        `${reason}: exchange attempted?`,
      );
      assert.equal(
        world.log.includes('userinfo'),
        ['userinfo failed', 'no refresh token granted'].includes(reason),
        `${reason}: identity asked?`,
      );
      assert.ok(!world.log.some((l) => l.startsWith('watch register')), `${reason}: no watch`);
    }
  });

  it('a re-consent without a refresh token keeps the stored one', async () => {
    const world = fakeWorld({ tokens: { refreshToken: undefined }, storedRefresh: 'stored-rt' });
    const s = await started(world);
    await world.auth.completeSignIn(world.em, { state: s.state, code: 'c', browserNonce: s.browserNonce });
    assert.ok(world.log.includes('store acc-1 -'));
  });
});

describe('disconnect and deleteAccount', () => {
  it('disconnect: watch stop, then revoke the stored refresh token, then remove credentials and sessions in one transaction', async () => {
    const world = fakeWorld();
    await world.auth.disconnect(world.em, 'acc-1');
    assert.deepEqual(world.log, [
      // The account row first: the one lock order of every transaction writing an account's rows.
      'watch stop acc-1',
      'revoke stored-rt',
      'begin',
      `update Account {"id":"acc-1"} {"sessionsRevokedAt":${JSON.stringify(T0)}}`,
      'remove credentials acc-1',
      'delete Session {"account":"acc-1"}',
      'clear SyncState watch ["acc-1"]',
      'commit',
    ]);
  });

  it('disconnect removes everything even when the watch stop and the revocation fail', async () => {
    const world = fakeWorld({ failStop: true, failRevoke: true });
    await world.auth.disconnect(world.em, 'acc-1');
    assert.ok(world.log.includes('revoke stored-rt'), 'revocation still attempted after a failed stop');
    assert.ok(world.log.includes('remove credentials acc-1'));
    assert.ok(world.log.includes('delete Session {"account":"acc-1"}'));
  });

  it('disconnect without stored credentials revokes nothing and still clears the sessions', async () => {
    const world = fakeWorld({ storedRefresh: null });
    await world.auth.disconnect(world.em, 'acc-1');
    assert.ok(!world.log.some((l) => l.startsWith('revoke')));
    assert.ok(world.log.includes('delete Session {"account":"acc-1"}'));
  });

  it('deleteAccount: watch stop, revoke, then delete the account row (cascading), even when revocation fails', async () => {
    const ok = fakeWorld();
    await ok.auth.deleteAccount(ok.em, 'acc-1');
    assert.deepEqual(ok.log, [
      'watch stop acc-1',
      'revoke stored-rt',
      'begin',
      'delete Account {"id":"acc-1"}',
      'commit',
    ]);
    const failing = fakeWorld({ failRevoke: true });
    await failing.auth.deleteAccount(failing.em, 'acc-1');
    assert.ok(failing.log.includes('delete Account {"id":"acc-1"}'));
  });
});
