import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

// No Docker engine runs here: check the file's syntax and the contract it must honour.
describe('docker-compose.yml', () => {
  const doc = parse(readFileSync('docker-compose.yml', 'utf8'), { strict: true, uniqueKeys: true });

  it('defines the app, PostgreSQL and the official Pub/Sub emulator', () => {
    assert.deepEqual(Object.keys(doc.services).sort(), ['app', 'postgres', 'pubsub']);
    assert.match(doc.services.postgres.image, /^postgres:\d+/);
    assert.match(doc.services.pubsub.image, /google-cloud-cli:emulators/);
    assert.match(doc.services.pubsub.command, /emulators pubsub start/);
    assert.deepEqual(Object.keys(doc.services.app.depends_on).sort(), ['postgres', 'pubsub']);
  });

  it('gives the app the environment of the runtime contract', () => {
    const env = doc.services.app.environment as Record<string, string>;
    for (const name of ['PORT', 'HOST', 'PUBLIC_BASE_URL', 'WEB_ORIGIN', 'DATABASE_URL', 'SESSION_SECRET', 'TOKEN_ENCRYPTION_KEY',
      'GOOGLE_CLIENT_ID', 'GOOGLE_CLIENT_SECRET', 'PUBSUB_PROJECT_ID', 'PUBSUB_TOPIC', 'PUBSUB_SUBSCRIPTION', 'PUBSUB_EMULATOR_HOST',
      'OPENAI_API_KEY', 'OPENAI_MODEL', 'STATUS_ADMIN_TOKEN']) {
      assert.ok(name in env, name);
    }
    assert.equal(env.PUBSUB_EMULATOR_HOST, 'pubsub:8085');
    assert.match(env.DATABASE_URL, /^postgres:\/\/[^@]+@postgres:5432\//);
    assert.match(env.PUBSUB_TOPIC, /projects\/[^/]+\/topics\//);
  });
});
