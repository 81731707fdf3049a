import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';

/**
 * Debian's Chromium, installed when it is missing (root, or sudo). The test run's global setup
 * calls this once, before the browser tests start side by side: two apt-get installs at once
 * would fight over dpkg's lock.
 */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const asRoot = process.getuid?.() === 0;
  const run = (args: string[]) => spawnSync(asRoot ? args[0]! : 'sudo', asRoot ? args.slice(1) : ['-n', ...args], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (run(['apt-get', 'install', '-y', '--no-install-recommends', 'chromium']).status !== 0) {
    run(['apt-get', 'update']);
    run(['apt-get', 'install', '-y', '--no-install-recommends', 'chromium']);
  }
  if (!existsSync(CHROMIUM)) throw new Error('Chromium is needed for the browser tests: apt-get install chromium');
}

/** Headless Debian Chromium for the browser tests (installed first when missing). */
export async function launchChromium(): Promise<Browser> {
  ensureChromium();
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}
