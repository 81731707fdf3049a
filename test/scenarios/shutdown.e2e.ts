import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../platform/runtime/config.js';
import { build } from '../../scripts/build.js';
import { SERVICE_NODE_FLAGS } from '../../scripts/node-flags.js';

/**
 * Runs a script as a user would (TypeScript through tsx, or a built `.js` with node alone), waits
 * until it prints the REST adapter's or its own address, then sends SIGTERM.
 */
async function startThenTerminate(
  args: string[],
  env: Record<string, string>,
  addressPattern: RegExp,
  whileUp: (url: string) => Promise<void> = async () => {},
): Promise<{ code: number | null | 'timeout'; healthy: boolean; output: string; whileDraining: { ready: number; health: number } | null }> {
  const child = spawn(process.execPath, args[0]!.endsWith('.js') ? args : ['--import', 'tsx', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      // Not `test`: outside tests Apollo installs its own signal handlers, which must not get in the way.
      NODE_ENV: 'development',
      MONGODB_URI: inject('mongodbUri'),
      MONGODB_DB_PREFIX: 'shutdown_',
      INTERNAL_SECRET: 'i'.repeat(40),
      GEOCODER_PRELOAD: 'false',
      LOG_LEVEL: 'info',
      DRAIN_SECONDS: '0',
      ...env,
    },
  });
  let output = '';
  const address = new Promise<string>((resolve) => {
    const look = (chunk: Buffer) => {
      output += chunk.toString();
      const match = addressPattern.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const url = await Promise.race([
      address,
      exited.then(() => null),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 45_000)),
    ]);
    const healthy =
      url !== null &&
      (await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      ));
    if (url !== null) await whileUp(url);
    child.kill('SIGTERM');
    let whileDraining: { ready: number; health: number } | null = null;
    if (url !== null && Number(env.DRAIN_SECONDS ?? 0) > 0) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      whileDraining = {
        ready: await fetch(`${url}/ready`).then(
          (r) => r.status,
          () => 0,
        ),
        health: await fetch(`${url}/health`).then(
          (r) => r.status,
          () => 0,
        ),
      };
    }
    const code = await Promise.race([exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 10_000))]);
    return { code, healthy, output, whileDraining };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

const ZERO_PORTS = {
  GATEWAY_PORT: '0',
  REST_PORT: '0',
  USER_SUBGRAPH_PORT: '0',
  CARDS_SUBGRAPH_PORT: '0',
  PAYMENTS_SUBGRAPH_PORT: '0',
  COMPLIANCE_SUBGRAPH_PORT: '0',
};

describe('shutting down on SIGTERM', () => {
  it('stops every service of `npm start` and exits with 0', async () => {
    const result = await startThenTerminate(['scripts/start.ts'], ZERO_PORTS, /REST adapter[^\n]*?(http:\/\/127\.0\.0\.1:\d+)/);
    expect(result.healthy, result.output).toBe(true);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('"msg":"stopped"');
  }, 75_000);

  it('drains a service run as its own process: not ready at once, still answering, then stopped with 0', async () => {
    const result = await startThenTerminate(
      ['scripts/serve.ts', 'cards'],
      { ...ZERO_PORTS, REDIS_URL: 'redis://127.0.0.1:6379', DRAIN_SECONDS: '2' },
      /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"listening"/,
    );
    expect(result.healthy, result.output).toBe(true);
    expect(result.whileDraining, result.output).toEqual({ ready: 503, health: 200 });
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('"msg":"draining"');
  }, 75_000);

  it('runs a service from `npm run build` with node alone, and stops it', async () => {
    // Inside the repository, so that the built modules find its node_modules, as they do in dist/.
    const into = path.join(REPO_ROOT, '.data', `build-${randomBytes(4).toString('hex')}`);
    try {
      build(into);
      // The image's command asks the built node-flags for the service's flags.
      expect(execFileSync(process.execPath, [path.join(into, 'scripts', 'node-flags.js'), 'cards'], { encoding: 'utf8' }).trim()).toBe(
        SERVICE_NODE_FLAGS.join(' '),
      );
      // The image's HEALTHCHECK, from the build, against the running service.
      let healthcheck: number | null = null;
      const result = await startThenTerminate(
        [path.join(into, 'scripts', 'serve.js'), 'cards'],
        { ...ZERO_PORTS, REDIS_URL: 'redis://127.0.0.1:6379' },
        /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"listening"/,
        async (url) => {
          healthcheck = await new Promise<number | null>((resolve) => {
            const env = { ...process.env, NODE_ENV: 'development', SERVICE: 'cards', CARDS_SUBGRAPH_PORT: new URL(url).port };
            spawn(process.execPath, [path.join(into, 'scripts', 'healthcheck.js'), 'ready'], { env, stdio: 'ignore' }).once(
              'exit',
              (code) => resolve(code),
            );
          });
        },
      );
      expect(result.healthy, result.output).toBe(true);
      expect(healthcheck).toBe(0);
      expect(result.code, result.output).toBe(0);
    } finally {
      rmSync(into, { recursive: true, force: true });
    }
  }, 150_000);
});
