/**
 * The router's type, as the client sees it. In the repository it is the server's own type (a
 * type-only import: no server code reaches a client bundle); the built package replaces this
 * module's declarations with a self-contained copy generated from it (shared/build/), so a
 * consumer of the tarball needs no server source.
 */
export type { AppRouter } from '../server/trpc/routers/index.ts';
