/**
 * Account settings: the signature appended to drafts, the response-style defaults the
 * draft route falls back to, and analysis on arrival (`autoTriage`). Stored on the account row.
 * Turning `autoTriage` on triages mail of the last AUTO_TRIAGE_LOOKBACK_MS too (the inbox a
 * user looks at when they turn it on), and starts the account's triage job (`onAutoTriage`). PATCH semantics: an absent field
 * is unchanged, null clears it. Updates lock the row so concurrent patches of different
 * fields do not undo each other.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import type { z } from 'zod';
import { Account } from '../../../db/entities/index.ts';
import { length, tone } from '../../../shared/schemas/ai.ts';
import type { Settings, settingsUpdate } from '../../../shared/schemas/settings.ts';
import { AppError } from '../errors.ts';

export type ResponseStyle = Settings['responseStyle'];
const STYLE_KEYS = ['tone', 'length', 'language', 'preferredTone'] as const;

/** The stored JSON read defensively: anything not valid today reads as unset. */
export function readResponseStyle(raw: unknown): ResponseStyle {
  const r = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const text = (v: unknown) => (typeof v === 'string' && v.trim() && v.length <= 60 ? v : null);
  return {
    tone: tone.safeParse(r.tone).data ?? null,
    length: length.safeParse(r.length).data ?? null,
    language: text(r.language),
    preferredTone: text(r.preferredTone),
  };
}

function toSettings(account: Account): Settings {
  return {
    signature: account.signature ?? null,
    responseStyle: readResponseStyle(account.responseStyle),
    autoTriage: account.autoTriage,
  };
}

/** Mail sent this long before `autoTriage` was turned on is triaged too. */
export const AUTO_TRIAGE_LOOKBACK_MS = 3 * 86_400_000;

export function createSettingsService(
  deps: { now?: () => Date; onAutoTriage?: (accountId: string) => Promise<unknown> } = {},
) {
  const now = deps.now ?? (() => new Date());
  return {
    async get(em: EntityManager, accountId: string): Promise<Settings> {
      const account = await em.findOne(Account, { id: accountId });
      if (!account) throw new AppError('AUTH_REQUIRED');
      return toSettings(account);
    },

    async update(em: EntityManager, accountId: string, patch: z.infer<typeof settingsUpdate>): Promise<Settings> {
      return em
        .transactional(async (tx) => {
          const account = await tx.findOne(
            Account,
            { id: accountId },
            { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
          );
          if (!account) throw new AppError('AUTH_REQUIRED');
          if (patch.signature !== undefined) account.signature = patch.signature;
          if (patch.responseStyle !== undefined) {
            const style: Record<string, string | null> = { ...readResponseStyle(account.responseStyle) };
            for (const key of STYLE_KEYS) {
              const value = patch.responseStyle[key];
              if (value !== undefined) style[key] = value;
            }
            const set = Object.fromEntries(
              Object.entries(style).filter(([, v]) => v !== null),
            ) as Account['responseStyle'];
            account.responseStyle = set && Object.keys(set).length ? set : null;
          }
          const turnedOn = patch.autoTriage === true && !account.autoTriage;
          if (patch.autoTriage !== undefined) account.autoTriage = patch.autoTriage;
          if (turnedOn) account.autoTriageFrom = new Date(now().getTime() - AUTO_TRIAGE_LOOKBACK_MS);
          await tx.flush();
          return { settings: toSettings(account), turnedOn };
        })
        .then(async ({ settings, turnedOn }) => {
          if (turnedOn) await deps.onAutoTriage?.(accountId);
          return settings;
        });
    },
  };
}
export type SettingsService = ReturnType<typeof createSettingsService>;
