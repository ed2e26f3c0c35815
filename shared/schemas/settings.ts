import { z } from 'zod';
import { length, tone } from './ai.ts';
import { text } from './common.ts';

export const responseStyle = z
  .object({
    tone: tone.nullable().optional(),
    length: length.nullable().optional(),
    language: text().trim().min(1).max(60).nullable().optional(),
    preferredTone: text().trim().min(1).max(60).nullable().optional(),
  })
  .strict();

export const settings = z.object({
  signature: z.string().nullable(),
  responseStyle: z.object({
    tone: tone.nullable(),
    length: length.nullable(),
    language: z.string().nullable(),
    preferredTone: z.string().nullable(),
  }),
  autoTriage: z.boolean().meta({
    description:
      'New inbox threads are analysed on arrival, in the background, within a share of the daily AI budget (AUTO_TRIAGE_BUDGET_SHARE); promotions, social, updates, forums, bulk mail and your own sent mail are skipped. Default false.',
  }),
});
export type Settings = z.infer<typeof settings>;

export const settingsUpdate = z
  .object({
    signature: text().max(2000).nullable().optional(),
    responseStyle: responseStyle.optional(),
    // Literals, not z.boolean(): trpc-to-openapi coerces a boolean field of a body, and "false" would read as true.
    autoTriage: z.union([z.literal(true), z.literal(false)]).optional(),
  })
  .strict();
