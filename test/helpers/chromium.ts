/**
 * Headless Debian Chromium driven by playwright-core (its own browser download is not
 * possible here). `.ci/run` installs the chromium package; where none can exist the
 * browser tests skip with this message, except in CI, where a missing browser fails.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function chromiumMissing(): string | null {
  if (existsSync(CHROMIUM_PATH)) return null;
  const message = `no Chromium at ${CHROMIUM_PATH} (apt-get install chromium)`;
  if (process.env.CI) throw new Error(`${message}: CI must have a browser`);
  return message;
}

export async function launchChromium(t: { after(fn: () => unknown): void }): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    // A fresh profile directory for every launch.
    env: { ...process.env, HOME: mkdtempSync(path.join(tmpdir(), 'mia-chromium-')) },
  });
  t.after(() => browser.close());
  return browser;
}
