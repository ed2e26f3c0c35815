/**
 * The per-client rate limits of spec part 8: each route with its own limit has its own
 * bucket (requests per minute); every other route shares the configurable global bucket.
 * Procedures name their bucket in their meta; http/rate-limit.ts counts them.
 */
export const FIXED_BUCKETS = {
  'auth.provider': 20,
  'auth.callback': 20,
  'auth.disconnect': 20,
  'auth.deleteAccount': 20,
  'mail.sync': 10,
  'mail.analyze': 20,
  'mail.draft': 20,
  'mail.correctAnalysis': 20,
  'settings.update': 20,
  'analytics.event': 60,
} as const;
export const FIXED_WINDOW_SECONDS = 60;

export type BucketName = keyof typeof FIXED_BUCKETS | 'global';
