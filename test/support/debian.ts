import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Held by the test file that runs apt-get; the others wait (two apt-get runs at once fight over dpkg's lock). */
const INSTALL_LOCK = path.join(tmpdir(), 'banking-graph-apt-install.lock');
const INSTALL_LIMIT_MS = 10 * 60_000;

function install(debianPackage: string): void {
  const asRoot = process.getuid?.() === 0;
  const run = (args: string[]) =>
    spawnSync(asRoot ? args[0]! : 'sudo', asRoot ? args.slice(1) : ['-n', ...args], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  if (run(['apt-get', 'install', '-y', '--no-install-recommends', debianPackage]).status !== 0) {
    run(['apt-get', 'update']);
    run(['apt-get', 'install', '-y', '--no-install-recommends', debianPackage]);
  }
}

/**
 * Makes sure `binary` exists, installing Debian's `debianPackage` the first time a test finds it
 * missing (as root, or with passwordless sudo); fails with the command to run otherwise.
 */
export async function ensureDebianPackage(binary: string, debianPackage: string): Promise<void> {
  const until = Date.now() + INSTALL_LIMIT_MS;
  while (!existsSync(binary)) {
    let held = false;
    try {
      mkdirSync(INSTALL_LOCK);
      held = true;
    } catch {
      // Another test file is installing; a lock older than the limit was left by a run that died.
      const since = existsSync(INSTALL_LOCK) ? Date.now() - statSync(INSTALL_LOCK).mtimeMs : 0;
      if (since > INSTALL_LIMIT_MS) rmSync(INSTALL_LOCK, { recursive: true, force: true });
    }
    if (held) {
      try {
        install(debianPackage);
      } finally {
        rmSync(INSTALL_LOCK, { recursive: true, force: true });
      }
      break;
    }
    if (Date.now() > until) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  if (!existsSync(binary)) throw new Error(`${binary} is needed for these tests: apt-get install ${debianPackage}`);
}
