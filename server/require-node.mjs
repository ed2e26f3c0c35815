// Preloaded before anything else by `npm start` and `npm test` (node --import): on another
// Node the service fails deep inside a dependency (MikroORM's `globSync` import) or on the
// .ts entry; say what is needed in one line instead. Plain JavaScript, so any Node runs it.

/** The one line to print for a Node version the service cannot run on, or null. */
export function nodeVersionProblem(version) {
  const major = Number(String(version).replace(/^v/, '').split('.')[0]);
  return major === 24 ? null : `Mail Inbox Assistant needs Node.js 24 LTS (found ${version}); see .nvmrc.`;
}

const problem = nodeVersionProblem(process.version);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
