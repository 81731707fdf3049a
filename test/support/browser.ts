import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
/** Held by the test file that installs Chromium; the others wait (two apt-get runs at once fight over dpkg's lock). */
const INSTALL_LOCK = path.join(tmpdir(), 'banking-graph-chromium-install.lock');
const INSTALL_LIMIT_MS = 10 * 60_000;

function install(): void {
  const asRoot = process.getuid?.() === 0;
  const run = (args: string[]) => spawnSync(asRoot ? args[0]! : 'sudo', asRoot ? args.slice(1) : ['-n', ...args], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (run(['apt-get', 'install', '-y', '--no-install-recommends', 'chromium']).status !== 0) {
    run(['apt-get', 'update']);
    run(['apt-get', 'install', '-y', '--no-install-recommends', 'chromium']);
  }
}

/** Debian's Chromium, installed by the first browser test that finds it missing (root, or sudo). */
async function ensureChromium(): Promise<void> {
  const until = Date.now() + INSTALL_LIMIT_MS;
  while (!existsSync(CHROMIUM)) {
    let held = false;
    try {
      mkdirSync(INSTALL_LOCK);
      held = true;
    } catch {
      // Another test file is installing it; a lock older than the limit was left by a run that died.
      const since = existsSync(INSTALL_LOCK) ? Date.now() - statSync(INSTALL_LOCK).mtimeMs : 0;
      if (since > INSTALL_LIMIT_MS) rmSync(INSTALL_LOCK, { recursive: true, force: true });
    }
    if (held) {
      try {
        install();
      } finally {
        rmSync(INSTALL_LOCK, { recursive: true, force: true });
      }
      break;
    }
    if (Date.now() > until) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  if (!existsSync(CHROMIUM)) throw new Error('Chromium is needed for the browser tests: apt-get install chromium');
}

/** Headless Debian Chromium for the browser tests (installed first when missing). */
export async function launchChromium(): Promise<Browser> {
  await ensureChromium();
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}
