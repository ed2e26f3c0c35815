// Preloaded (node --import) by tracing.test.ts in front of the service: records every package
// the process resolves (import and require alike), written as JSON to $MIA_RECORD_MODULES when
// the process exits. Plain JavaScript, so Node runs it before anything else is loaded.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const out = process.env.MIA_RECORD_MODULES;
const seen = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    const m = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(result.url);
    if (m) seen.add(m[1]);
    else if (result.url.startsWith('file:')) seen.add(new URL(result.url).pathname);
    return result;
  },
});
process.once('exit', () => {
  if (out) writeFileSync(out, JSON.stringify([...seen].sort()));
});
