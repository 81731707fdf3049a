// Starts the services under benchmark as bench/services.ts's two tiers, each in its own process.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { PeerAddresses, StackAddresses } from './services.js';
import { SERVICE_NODE_FLAGS } from '../scripts/node-flags.js';

const SERVICES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'services.ts');

/** The running tiers: every address, and a stop that ends both processes (the peer first). */
export interface Tiers {
  addresses: StackAddresses & PeerAddresses;
  stop(): Promise<void>;
}

/** One tier in its own process; resolves with the addresses it prints. */
function startTier<T>(tier: 'stack' | 'peer', env: Record<string, string>, profileDir: string | null): { child: ChildProcess; addresses: Promise<T> } {
  // Ours with the flags `npm start` gives them; Hive Gateway with Node's defaults, as its own CLI runs it.
  const flags = tier === 'stack' ? SERVICE_NODE_FLAGS : [];
  const child = spawn(process.execPath, [...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), ...flags, '--import', 'tsx', SERVICES, tier], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const addresses = new Promise<T>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the ${tier} tier exited with ${code}`)));
    createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line) as T));
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
 * Starts the stack tier, then the peer over its subgraphs. Both get the same internal secret.
 * `env` goes to both (say SERVICE_KEYS). With `profileDir` each runs under `node --cpu-prof`. No
 * tier outlives this process.
 */
export async function startTiers(options: { env?: Record<string, string>; profileDir?: string | null } = {}): Promise<Tiers> {
  const profileDir = options.profileDir ?? null;
  const shared = { ...options.env, INTERNAL_SECRET: randomBytes(32).toString('hex'), MONGODB_DB_PREFIX: `bench${Date.now().toString(36)}_` };
  const children: ChildProcess[] = [];
  process.once('exit', () => {
    for (const child of children) child.kill('SIGKILL');
  });
  const stack = startTier<StackAddresses>('stack', shared, profileDir);
  children.push(stack.child);
  const ours = await stack.addresses;
  const peer = startTier<PeerAddresses>('peer', {
    ...shared,
    USER_SUBGRAPH_URL: ours.subgraphs.user,
    CARDS_SUBGRAPH_URL: ours.subgraphs.cards,
    PAYMENTS_SUBGRAPH_URL: ours.subgraphs.payments,
    COMPLIANCE_SUBGRAPH_URL: ours.subgraphs.compliance,
  }, profileDir);
  children.push(peer.child);
  try {
    return {
      addresses: { ...ours, ...(await peer.addresses) },
      stop: async () => {
        await stopChild(peer.child);
        await stopChild(stack.child);
      },
    };
  } catch (error) {
    await stopChild(stack.child);
    throw error;
  }
}
