/** How the sync_states repository runs its statements: the domain's one `Sql` and `select`. */
export { select, type Sql } from '../../../sql.ts';
