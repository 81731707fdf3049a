// Replicas on one machine: every subgraph, two gateways and two REST adapters, each a process of its own, behind HAProxy.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { reservePort } from '../../platform/mongo/ferretdb.js';
import { REPO_ROOT, SUBGRAPH_NAMES, type SubgraphName } from '../../platform/runtime/config.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { nodeFlagsOf } from '../node-flags.js';
import { HAPROXY_BIN, haproxyConfig, haproxyServers, spawnHaproxy, type HaproxyServerState } from './haproxy.js';
import { createSupervisor, type Backoff } from './supervisor.js';

/** The two gateways and the two REST adapters, by the names HAProxy and the logs give them. */
export const GATEWAYS = ['gateway-1', 'gateway-2'] as const;
const ADAPTERS = ['rest-adapter-1', 'rest-adapter-2'] as const;
export type Gateway = (typeof GATEWAYS)[number];
type Adapter = (typeof ADAPTERS)[number];
/** One process of the cluster. */
export type Member = SubgraphName | Gateway | Adapter;
export const MEMBERS: readonly Member[] = [...SUBGRAPH_NAMES, ...GATEWAYS, ...ADAPTERS];
/** Who writes a cluster's output: a member, HAProxy, or the cluster itself (its supervision, as JSON lines). */
type Writer = Member | 'haproxy' | 'cluster';

/** HAProxy's two fronts: `graphql` over the gateways, `rest` over the adapters. */
const frontOf = (member: Gateway | Adapter) => (serviceOf(member) === 'gateway' ? 'graphql' : 'rest');
const PORT_VARIABLE = {
  user: 'USER_SUBGRAPH_PORT',
  cards: 'CARDS_SUBGRAPH_PORT',
  payments: 'PAYMENTS_SUBGRAPH_PORT',
  compliance: 'COMPLIANCE_SUBGRAPH_PORT',
  gateway: 'GATEWAY_PORT',
  'rest-adapter': 'REST_PORT',
} as const;
const SERVE = path.join(REPO_ROOT, 'scripts', 'serve.ts');
/** Lines of output kept per process, for the tail shown when something fails. */
const KEPT_LINES = 400;

/** The service a member runs (`npm run start:service -- <service>`). */
function serviceOf(member: Member): SubgraphName | 'gateway' | 'rest-adapter' {
  if (member.startsWith('gateway-')) return 'gateway';
  if (member.startsWith('rest-adapter-')) return 'rest-adapter';
  return member as SubgraphName;
}

/** How a cluster is started. */
export interface ClusterOptions {
  /**
   * Every process's environment, over this process's own: at least `MONGODB_URI`, `REDIS_URL` and
   * `INTERNAL_SECRET` (shared, as serve.ts requires). Ports, `HOST` and the URLs between the
   * members are set here and override it.
   */
  env: Record<string, string | undefined>;
  /** HAProxy's REST front; 0 (the default) takes a free port. */
  restPort?: number;
  /** HAProxy's GraphQL front; 0 (the default) takes a free port. */
  graphqlPort?: number;
  /** The HAProxy binary; Debian's by default. */
  haproxy?: string;
  /** Called with every line a member or HAProxy writes, as it comes, and with the cluster's own log lines. */
  onLine?: (who: Writer, line: string) => void;
  /** Called when a member or HAProxy exits without being asked to, with how it ended and its output's tail; it is started again. */
  onUnexpectedExit?: (member: Member | 'haproxy', how: string, tail: string) => void;
  /** The delays before a process that exited is started again (scripts/lib/supervisor.ts's defaults otherwise). */
  backoff?: Partial<Backoff>;
  /** How long start-up may take until every member is ready (default 120 s). */
  readyTimeoutMs?: number;
  /**
   * Runs each process in a process group of its own, so that a terminal's Ctrl-C reaches only the
   * caller, which stops them with `close` (each drains once); off, a signal to the caller's group
   * reaches them too and they drain on their own.
   */
  detached?: boolean;
}

/** A running cluster. */
export interface Cluster {
  /** HAProxy's front over the REST adapters: the specs' `{base_url}`. */
  restUrl: string;
  /** HAProxy's front over the gateways: `…/graphql`, HTTP and graphql-ws. */
  graphqlUrl: string;
  /** Each member's own address (`http://127.0.0.1:<port>`), past HAProxy. */
  urls: Readonly<Record<Member, string>>;
  /** A running member's process id; undefined while it is stopped or waiting to be started again. */
  pid(member: Member): number | undefined;
  /**
   * Stops the member's supervision, sends the signal (SIGTERM by default) and resolves once the member
   * has exited, saying how (`exited with 0`). It stays stopped until `restart`.
   */
  stop(member: Member, signal?: NodeJS.Signals): Promise<string>;
  /** Starts a stopped member again on its port, supervised; resolves once it is ready and, for a replica, back in HAProxy's rotation. */
  restart(member: Member): Promise<void>;
  /** HAProxy's view of a replica: `UP`, `DOWN` or a transition (`UP 1/3`), its current sessions, and its retried connections. */
  balancerState(member: Gateway | Adapter): Promise<HaproxyServerState>;
  /** The last `lines` lines of each member's output, of HAProxy's and of the cluster's own log. */
  tail(lines?: number): string;
  /**
   * Ends supervision first, then stops every member (SIGTERM, so they drain; SIGKILL after `graceMs`,
   * default 15 s) and HAProxy, and removes the temporary folder.
   */
  close(graceMs?: number): Promise<void>;
}

function forEachLine(stream: Readable | null, onLine: (line: string) => void): void {
  let partial = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line) onLine(line);
  });
  stream?.on('end', () => {
    if (partial) onLine(partial);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts the four subgraphs, two gateways and two REST adapters, each with `scripts/serve.ts` in
 * a process of its own on a free loopback port, and HAProxy in front of the gateways and of the
 * adapters, checking `/ready`. The gateways reach the subgraphs directly; the adapters and the
 * subgraphs reach the graph through HAProxy (`GATEWAY_URL`), so that either gateway may restart
 * under them. All processes start at once; this resolves when every one is ready and in
 * rotation. Every process, HAProxy included, is supervised (scripts/lib/supervisor.ts): one that
 * exits unasked is started again on its port, and the cluster logs it. No process outlives this one.
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  for (const name of ['MONGODB_URI', 'REDIS_URL', 'INTERNAL_SECRET']) {
    if (!options.env[name]) throw new Error(`startCluster needs ${name}: every process must share it.`);
  }
  const haproxyBin = options.haproxy ?? HAPROXY_BIN;
  if (!existsSync(haproxyBin)) throw new Error(`${haproxyBin} was not found: apt-get install haproxy, or set HAPROXY to its binary.`);
  // Held together, so that no two members draw the same port; let go just before the processes bind them.
  const reservations = await Promise.all(MEMBERS.map(() => reservePort()));
  const fronts = await Promise.all([options.restPort, options.graphqlPort].map(async (port) => (port ? null : reservePort())));
  // Production serves /metrics on a port of its own (METRICS_PORT, 9464 by default): one each, on one machine.
  const production = (options.env.NODE_ENV ?? process.env.NODE_ENV) === 'production';
  const metricsReservations = production ? await Promise.all(MEMBERS.map(() => reservePort())) : [];
  const ports = Object.fromEntries(MEMBERS.map((member, i) => [member, reservations[i]!.port])) as Record<Member, number>;
  const restPort = options.restPort || fronts[0]!.port;
  const graphqlPort = options.graphqlPort || fronts[1]!.port;
  const metricsPorts = Object.fromEntries(metricsReservations.map((reservation, i) => [MEMBERS[i]!, reservation.port])) as Partial<
    Record<Member, number>
  >;
  await Promise.all([...reservations, ...fronts, ...metricsReservations].map(async (reservation) => reservation?.release()));

  const local = (port: number) => `http://127.0.0.1:${port}`;
  const urls = Object.fromEntries(MEMBERS.map((member) => [member, local(ports[member])])) as Record<Member, string>;
  const restUrl = local(restPort);
  const graphqlUrl = `${local(graphqlPort)}/graphql`;
  const shared: Record<string, string | undefined> = {
    ...process.env,
    ...options.env,
    HOST: '127.0.0.1',
    GATEWAY_URL: graphqlUrl,
    REST_PUBLIC_URL: options.env.REST_PUBLIC_URL ?? restUrl,
    USER_SUBGRAPH_URL: `${urls.user}/graphql`,
    CARDS_SUBGRAPH_URL: `${urls.cards}/graphql`,
    PAYMENTS_SUBGRAPH_URL: `${urls.payments}/graphql`,
    COMPLIANCE_SUBGRAPH_URL: `${urls.compliance}/graphql`,
  };
  delete shared.SERVICE;
  // One port of its own would be one for all eight: /metrics stays on each process's own port
  // (in production, on a port of each process's own).
  delete shared.METRICS_PORT;

  const logs = new Map<Writer, string[]>();
  const remember = (who: Writer, line: string) => {
    const lines = logs.get(who) ?? [];
    lines.push(line);
    if (lines.length > KEPT_LINES) lines.splice(0, lines.length - KEPT_LINES);
    logs.set(who, lines);
    options.onLine?.(who, line);
  };
  const tailOf = (who: Writer, lines: number) => `--- ${who} (last ${lines} lines) ---\n${(logs.get(who) ?? []).slice(-lines).join('\n')}`;
  const tail = (lines = 40) => [...MEMBERS, 'haproxy' as const, 'cluster' as const].map((who) => tailOf(who, lines)).join('\n');

  const dir = await mkdtemp(path.join(tmpdir(), 'banking-graph-cluster-'));
  const statsSocket = path.join(dir, 'haproxy.sock');
  const configFile = path.join(dir, 'haproxy.cfg');
  const replicas = (names: readonly Member[]) => names.map((name) => ({ name, port: ports[name] }));
  await writeFile(
    configFile,
    haproxyConfig(
      [
        { name: 'rest', port: restPort, servers: replicas(ADAPTERS) },
        { name: 'graphql', port: graphqlPort, servers: replicas(GATEWAYS) },
      ],
      { statsSocket },
    ),
  );

  const spawnHaproxyNow = () =>
    spawnHaproxy(configFile, (line) => remember('haproxy', line), {
      binary: haproxyBin,
      detached: options.detached ?? false,
    });
  const spawnMember = (member: Member) => {
    const service = serviceOf(member);
    const child = spawn(process.execPath, [...nodeFlagsOf(service), '--import', 'tsx', SERVE, service], {
      cwd: REPO_ROOT,
      env: {
        ...shared,
        [PORT_VARIABLE[service]]: String(ports[member]),
        ...(metricsPorts[member] ? { METRICS_PORT: String(metricsPorts[member]) } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: options.detached ?? false,
    });
    remember(member, `--- started as process ${child.pid ?? '?'} ---`);
    forEachLine(child.stdout, (line) => remember(member, line));
    forEachLine(child.stderr, (line) => remember(member, line));
    child.once('error', (error) => remember(member, `--- could not run: ${error.message} ---`));
    child.once('exit', (code, signal) => remember(member, `--- ${signal ? `killed by ${signal}` : `exited with ${code}`} ---`));
    return child;
  };
  const supervisor = createSupervisor<Member | 'haproxy'>({
    spawn: (name) => (name === 'haproxy' ? spawnHaproxyNow() : spawnMember(name)),
    logger: createLogger('info', { service: 'cluster' }, (line) => remember('cluster', line.trimEnd())),
    ...(options.backoff ? { backoff: options.backoff } : {}),
    onUnexpectedExit: (name, how) => options.onUnexpectedExit?.(name, how, tailOf(name, 60)),
  });
  const haproxyRunning = () => {
    const haproxy = supervisor.child('haproxy');
    return haproxy !== undefined && haproxy.exitCode === null && haproxy.signalCode === null;
  };
  const killNow = () => {
    for (const name of [...MEMBERS, 'haproxy' as const]) supervisor.child(name)?.kill('SIGKILL');
  };
  process.once('exit', killNow);
  supervisor.start('haproxy');

  const balancerState = async (member: Gateway | Adapter): Promise<HaproxyServerState> => {
    const state = (await haproxyServers(statsSocket)).get(`${frontOf(member)}/${member}`);
    if (!state) throw new Error(`HAProxy does not list ${member}`);
    return state;
  };

  const waitReady = async (member: Member, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    const child = supervisor.child(member);
    for (;;) {
      if (!child || child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${member} ended before it was ready:\n${tailOf(member, 60)}`);
      const status = await fetch(`${urls[member]}/ready`, { signal: AbortSignal.timeout(2000) }).then(
        async (response) => {
          await response.arrayBuffer();
          return response.status;
        },
        () => 0,
      );
      if (status === 200) break;
      if (Date.now() > deadline)
        throw new Error(`${member} was not ready within ${timeoutMs} ms (last /ready: ${status}):\n${tailOf(member, 60)}`);
      await sleep(100);
    }
    if (member === 'user' || member === 'cards' || member === 'payments' || member === 'compliance') return;
    // Ready is not enough: another replica may be stopped next only once HAProxy sends this one requests again.
    for (;;) {
      if (!haproxyRunning()) throw new Error(`HAProxy ended:\n${tailOf('haproxy', 40)}`);
      const state = await balancerState(member).catch(() => null);
      if (state?.status === 'UP') return;
      if (Date.now() > deadline)
        throw new Error(
          `HAProxy did not take ${member} into rotation within ${timeoutMs} ms (${state?.status ?? 'no state'}):\n${tailOf('haproxy', 40)}`,
        );
      await sleep(50);
    }
  };

  const close = async (graceMs = 15_000) => {
    // Before any signal: a member that exits from here on is not started again.
    supervisor.halt();
    // HAProxy last: the members drain through it.
    await Promise.all(MEMBERS.map((member) => supervisor.stop(member, 'SIGTERM', graceMs)));
    await supervisor.stop('haproxy', 'SIGKILL');
    process.off('exit', killNow);
    await rm(dir, { recursive: true, force: true });
  };

  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
  try {
    for (const member of MEMBERS) supervisor.start(member);
    await Promise.all(MEMBERS.map((member) => waitReady(member, readyTimeoutMs)));
  } catch (error) {
    await close(2000);
    throw error;
  }
  return {
    restUrl,
    graphqlUrl,
    urls,
    pid: (member) => supervisor.child(member)?.pid,
    stop: (member, signal = 'SIGTERM') => supervisor.stop(member, signal),
    restart: async (member) => {
      supervisor.start(member);
      await waitReady(member, readyTimeoutMs);
    },
    balancerState,
    tail,
    close,
  };
}
