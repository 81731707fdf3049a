// Starts the services under benchmark as bench/services.ts's two tiers, each in its own process.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort } from '../platform/ferretdb.js';
import type { FrontAddresses, SubgraphsAddresses } from './services.js';

const SERVICES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'services.ts');

/** The running tiers: every address, and a stop that ends both processes (the front first). */
export interface Tiers {
  addresses: SubgraphsAddresses & FrontAddresses;
  stop(): Promise<void>;
}

/** One tier in its own process; resolves with the addresses it prints. */
function startTier<T>(tier: 'subgraphs' | 'front', env: Record<string, string>, profileDir: string | null): { child: ChildProcess; addresses: Promise<T> } {
  const child = spawn(process.execPath, [...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), '--import', 'tsx', SERVICES, tier], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const addresses = new Promise<T>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the ${tier} tier exited with ${code}`)));
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line) as T));
  });
  return { child, addresses };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Starts the subgraphs tier, then the front tier over its addresses. Both get the same internal
 * secret; the subgraphs reach the graph at the gateway's port, chosen here. `env` goes to both
 * (say SERVICE_KEYS). With `profileDir` each runs under `node --cpu-prof`. No tier outlives this
 * process.
 */
export async function startTiers(options: { env?: Record<string, string>; profileDir?: string | null } = {}): Promise<Tiers> {
  const profileDir = options.profileDir ?? null;
  const shared = { ...options.env, INTERNAL_SECRET: randomBytes(32).toString('hex'), MONGODB_DB_PREFIX: `bench${Date.now().toString(36)}_`, GATEWAY_PORT: String(await freePort()) };
  const children: ChildProcess[] = [];
  process.once('exit', () => {
    for (const child of children) child.kill('SIGKILL');
  });
  const subgraphs = startTier<SubgraphsAddresses>('subgraphs', shared, profileDir);
  children.push(subgraphs.child);
  const back = await subgraphs.addresses;
  const front = startTier<FrontAddresses>('front', {
    ...shared,
    USER_SUBGRAPH_URL: back.subgraphs.user,
    CARDS_SUBGRAPH_URL: back.subgraphs.cards,
    PAYMENTS_SUBGRAPH_URL: back.subgraphs.payments,
    COMPLIANCE_SUBGRAPH_URL: back.subgraphs.compliance,
  }, profileDir);
  children.push(front.child);
  try {
    return {
      addresses: { ...back, ...(await front.addresses) },
      stop: async () => {
        await stopChild(front.child);
        await stopChild(subgraphs.child);
      },
    };
  } catch (error) {
    await stopChild(subgraphs.child);
    throw error;
  }
}
