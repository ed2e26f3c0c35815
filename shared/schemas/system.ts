import { z } from 'zod';
import { timestamp } from './common.ts';

export const componentState = z.enum(['operational', 'degraded', 'down', 'not_configured']);
export const componentReport = z.object({ state: componentState, detail: z.string() });

export const healthReport = z.object({
  status: z.enum(['ok', 'degraded', 'down']),
  service: z.literal('mail-inbox-assistant'),
  time: timestamp,
  database: z.enum(['ok', 'down']),
  mail: componentReport,
  ai: componentReport,
});
export type HealthReport = z.infer<typeof healthReport>;
