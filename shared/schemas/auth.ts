import { z } from 'zod';
import { bodyLiteralTrue } from './common.ts';

export const sessionInfo = z.object({
  authenticated: z.boolean(),
  csrfToken: z.string(),
  email: z.string().optional(),
});
export type SessionInfo = z.infer<typeof sessionInfo>;

export const deleteAccountInput = z.object({ confirm: bodyLiteralTrue }).strict();
