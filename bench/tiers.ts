// Starts the services under benchmark as bench/services.ts's tiers, each in its own process: the subgraphs (with or without our gateway), our gateway, and the two peers; built first (npm run build), and run with node alone, as a deployment runs them.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import type { GatewayAddresses, PeerAddresses, PeerRuntime, StackAddresses } from './services.js';
import { build, DIST } from '../scripts/build.js';
import { nodeFlagsOf, SERVICE_NODE_FLAGS } from '../scripts/node-flags.js';

const SERVICES = path.join(DIST, 'bench', 'services.js');
let built = false;

/** The running tiers: every address, and a stop that ends every process (the peers first). */
export interface Tiers {
  addresses: StackAddresses & GatewayAddresses & PeerAddresses;
  /** The INTERNAL_SECRET every tier shares (to sign a principal for calling a subgraph directly). */
  internalSecret: string;
  /** The process of each tier (the gateway's is the stack's when it runs there). */
  pids: { stack: number; gateway: number; hive: number; hiveRouter: number; baseline?: number };
  /** Where the baseline build's gateway is served, when one was asked for. */
  baseline?: GatewayAddresses;
  stop(): Promise<void>;
}

/**
 * One tier in its own process (`stack`, or `peer` with its runtime); resolves with the addresses it
 * prints. `services` is the built entry that runs it: this checkout's, or a baseline checkout's.
 */
function startTier<T>(
  tier: ['stack'] | ['gateway'] | ['peer', PeerRuntime],
  env: Record<string, string>,
  profileDir: string | null,
  services = SERVICES,
): { child: ChildProcess; addresses: Promise<T> } {
  // Ours with the flags a deployment gives them (scripts/node-flags.ts; the gateway's tier with BENCH_GATEWAY_FLAGS instead, where set), and the gateway's
  // able to collect its garbage when its memory is read; Hive Gateway with Node's defaults, as its own CLI runs it.
  const gatewayFlags = process.env.BENCH_GATEWAY_FLAGS;
  const flags =
    tier[0] === 'peer'
      ? []
      : tier[0] === 'gateway'
        ? [...(gatewayFlags === undefined ? nodeFlagsOf('gateway') : gatewayFlags.split(' ').filter(Boolean)), '--expose-gc']
        : SERVICE_NODE_FLAGS;
  const child = spawn(
    process.execPath,
    [...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), ...flags, services, ...tier],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } },
  );
  const addresses = new Promise<T>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the ${tier.join(' ')} tier exited with ${code}`)));
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

/** A port free now, for a server that starts later in another process (the subgraphs must know the gateway's address first). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts the stack tier, then our gateway over its subgraphs in a process of its own (unless
 * `gateway` is `with-subgraphs`: then the stack tier runs it, as `npm start` does), and both peers
 * (Hive Gateway on its default runtime and on its Router Runtime). All get the same internal
 * secret. `env` goes to all (say SERVICE_KEYS). With `profileDir` each runs under `node
 * --cpu-prof`. With `baseline` (another checkout of this project, built with `npm run build`), its
 * gateway runs too, beside ours and over the same subgraphs, to compare two builds in one run. No
 * tier outlives this process.
 */
export async function startTiers(
  options: {
    env?: Record<string, string>;
    profileDir?: string | null;
    gateway?: 'separate' | 'with-subgraphs';
    baseline?: string;
  } = {},
): Promise<Tiers> {
  const profileDir = options.profileDir ?? null;
  // Without Redis each process has a bus of its own: no gateway answers a session from memory, and the figures are not a deployment's.
  if (!process.env.REDIS_URL && !options.env?.REDIS_URL)
    throw new Error(
      'The tiers are separate processes, which share events over Redis: set REDIS_URL (REDIS_URL=redis://127.0.0.1:6379 npm run bench).',
    );
  if (!built) {
    build();
    built = true;
  }
  const internalSecret = randomBytes(32).toString('hex');
  const shared = { ...options.env, INTERNAL_SECRET: internalSecret, MONGODB_DB_PREFIX: `bench${Date.now().toString(36)}_` };
  const children: ChildProcess[] = [];
  process.once('exit', () => {
    for (const child of children) child.kill('SIGKILL');
  });
  const separate = (options.gateway ?? 'separate') === 'separate';
  const gatewayPort = separate ? await freePort() : 0;
  const stack = startTier<StackAddresses>(
    ['stack'],
    separate
      ? { ...shared, BENCH_SEPARATE_GATEWAY: '1', IN_PROCESS_CALLS: 'none', GATEWAY_URL: `http://127.0.0.1:${gatewayPort}/graphql` }
      : shared,
    profileDir,
  );
  children.push(stack.child);
  const stopAll = async () => {
    for (const child of children.slice(1).reverse()) await stopChild(child);
    await stopChild(stack.child);
  };
  try {
    const ours = await stack.addresses;
    const gatewayEnv = {
      ...shared,
      USER_SUBGRAPH_URL: ours.subgraphs.user,
      CARDS_SUBGRAPH_URL: ours.subgraphs.cards,
      PAYMENTS_SUBGRAPH_URL: ours.subgraphs.payments,
      COMPLIANCE_SUBGRAPH_URL: ours.subgraphs.compliance,
    };
    const gateway = separate
      ? startTier<GatewayAddresses>(
          ['gateway'],
          { ...gatewayEnv, GATEWAY_PORT: String(gatewayPort), IN_PROCESS_CALLS: 'adapter' },
          profileDir,
        )
      : null;
    if (gateway) children.push(gateway.child);
    const baseline = options.baseline
      ? startTier<GatewayAddresses>(
          ['gateway'],
          { ...gatewayEnv, GATEWAY_PORT: String(await freePort()), IN_PROCESS_CALLS: 'adapter' },
          profileDir,
          path.join(path.resolve(options.baseline), 'dist', 'bench', 'services.js'),
        )
      : null;
    if (baseline) children.push(baseline.child);
    const hive = startTier<Pick<PeerAddresses, 'hive'>>(['peer', 'default'], gatewayEnv, profileDir);
    const hiveRouter = startTier<Pick<PeerAddresses, 'hiveRouter'>>(['peer', 'router'], gatewayEnv, profileDir);
    children.push(hive.child, hiveRouter.child);
    const [gatewayAddresses, hiveAddresses, hiveRouterAddresses, baselineAddresses] = await Promise.all([
      gateway?.addresses ?? null,
      hive.addresses,
      hiveRouter.addresses,
      baseline?.addresses ?? null,
    ]);
    const ourGateway = gatewayAddresses ?? { gateway: ours.gateway!, rest: ours.rest!, gatewayControl: ours.gatewayControl! };
    return {
      addresses: { ...ours, ...ourGateway, ...hiveAddresses, ...hiveRouterAddresses },
      internalSecret,
      pids: {
        stack: stack.child.pid!,
        gateway: (gateway ?? stack).child.pid!,
        hive: hive.child.pid!,
        hiveRouter: hiveRouter.child.pid!,
        ...(baseline ? { baseline: baseline.child.pid! } : {}),
      },
      ...(baselineAddresses ? { baseline: baselineAddresses } : {}),
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
