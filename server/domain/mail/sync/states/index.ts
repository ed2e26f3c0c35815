/**
 * The repository of `sync_states`, one row per account: every statement that reads or writes
 * the table is in this folder, by who uses it: the sync's lease and checkpoint (lease.ts), the
 * mail watch and the row itself (watch.ts), the quiet sweep's pick (sweep.ts), the
 * notification intake (notify.ts), a backfill's estimated total (inbox-estimate.ts), and the
 * background sync's outcome with the gauges GET /metrics reads (outcome.ts).
 */
export * from './inbox-estimate.ts';
export * from './lease.ts';
export * from './notify.ts';
export * from './outcome.ts';
export * from './sql.ts';
export * from './sweep.ts';
export * from './watch.ts';
