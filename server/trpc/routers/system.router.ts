import { z } from 'zod';
import { healthReport } from '../../../shared/schemas/system.ts';
import { publicProcedure, router } from '../init.ts';

// GET /health itself is a plain Koa route (it answers 503 with this same body when the
// database is down, which an error envelope could not); this is its /trpc twin.
export const systemRouter = router({
  health: publicProcedure
    .input(z.void())
    .output(healthReport)
    .query(({ ctx }) => ctx.services.health.check()),
});
