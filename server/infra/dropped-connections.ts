/**
 * The last guard of `npm start` against a database restart taking the process down. When
 * PostgreSQL ends its connections (a restart's 57P01, a cut link), a query in flight rejects; if
 * no one awaits that promise any more (a caller that gave up on it), Node ends the process for an
 * unhandled rejection (and for an 'error' event no one listens to). The loaded mixed-load runs met
 * that (exit 1 during a restart, a 57P01 with only the driver's parser in its stack): such an error
 * is logged at error level with its code and the process goes on, every request and job having had
 * its own answer. Any other unhandled rejection or uncaught exception still ends the process.
 */
import { inspect } from 'node:util';
import type { Logger } from './logger.ts';
import { errorSummary } from './logger.ts';
import { isPgConnectionLoss } from './pg-connection-loss.ts';

/**
 * Installs the guard on `target` (the process); answers how to remove it. It hears both ways such
 * an error escapes: a rejected promise no one awaits, and an 'error' event on a connection no one
 * listens to (thrown where it was emitted: the connection it came from is dead and its pool drops it).
 */
export function guardDroppedConnections(target: NodeJS.EventEmitter, log: Logger): () => void {
  const goOn = (err: unknown, what: string) =>
    log.error(errorSummary(err), `a dropped database connection's error was ${what}; going on`);
  const onRejection = (err: unknown) => {
    if (!isPgConnectionLoss(err)) throw err; // as an uncaught exception, below: the process ends with it
    goOn(err, 'a rejection no one awaited');
  };
  const onException = (err: unknown) => {
    if (isPgConnectionLoss(err)) return goOn(err, 'thrown where no one listened');
    // Not ours to keep alive: the error as Node prints it (stack and properties), and the exit code it uses.
    process.stderr.write(`${inspect(err)}\n`);
    process.exit(1);
  };
  target.on('unhandledRejection', onRejection);
  target.on('uncaughtException', onException);
  return () => {
    target.off('unhandledRejection', onRejection);
    target.off('uncaughtException', onException);
  };
}
