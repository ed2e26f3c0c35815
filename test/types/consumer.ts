/**
 * A web app's use of the client package, type-checked by `npm run typecheck` (this file is
 * in tsconfig's include). Each @ts-expect-error line must fail to compile: if the client
 * lost its end-to-end types, tsc would report the directive as unused and fail.
 */
import { createClient, isApiError, type ApiError } from '../../shared/client.ts';
import type { ErrorCode } from '../../shared/errors.ts';

export async function exampleConsumer() {
  const api = createClient({ baseUrl: 'https://api.example.com' });
  const list = await api.mail.threads.query({ limit: 20, offset: 0 });
  const subject: string | undefined = list.threads[0]?.subject;
  const total: number = list.total;

  // @ts-expect-error: no such procedure
  await api.mail.threadz.query({ limit: 20 });
  // @ts-expect-error: limit is a number
  await api.mail.threads.query({ limit: true });
  // @ts-expect-error: no such field on a thread summary
  const wrong: string = list.threads[0]!.subjectLine;
  // @ts-expect-error: tone is one of default | professional | friendly
  await api.mail.draft.mutate({ threadId: '00000000-0000-4000-8000-000000000000', tone: 'sarcastic' });
  // @ts-expect-error: a query is not a mutation
  await api.mail.sync.query();

  const analysis = await api.mail.analyze.mutate({ threadId: '00000000-0000-4000-8000-000000000000' });
  const priority: 'URGENT' | 'IMPORTANT' | 'NORMAL' | 'LOW' = analysis.priority;
  try {
    await api.mail.sync.mutate();
  } catch (err) {
    if (isApiError(err, 'RATE_LIMITED')) {
      const code: ErrorCode = err.code;
      const e: ApiError = err;
      return { code, e };
    }
  }
  return { subject, total, wrong, priority };
}
