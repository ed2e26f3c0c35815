/**
 * A node:test reporter (test/run.ts adds it to each shard): the seconds each test file's
 * top-level tests took, as one JSON object by path, so that the next plan of shards can
 * balance them (test/file-times.json).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface TestEvent {
  type: string;
  data: { nesting?: number; file?: string; details?: { duration_ms?: number } };
}

export default async function* fileTimes(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const seconds: Record<string, number> = {};
  for await (const { type, data } of source) {
    if ((type !== 'test:pass' && type !== 'test:fail') || data.nesting !== 0 || !data.file) continue;
    const file = path.relative(process.cwd(), data.file.startsWith('file:') ? fileURLToPath(data.file) : data.file);
    seconds[file] = Math.round(((seconds[file] ?? 0) + (data.details?.duration_ms ?? 0) / 1000) * 10) / 10;
  }
  yield `${JSON.stringify(seconds)}\n`;
}
