// HAProxy in front of replicas: its configuration, and its view of the servers read from its stats socket.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

/** Debian's HAProxy (`apt-get install haproxy`); HAPROXY names another binary. */
export const HAPROXY_BIN = process.env.HAPROXY ?? '/usr/sbin/haproxy';

/** One frontend on a loopback port, balancing over its servers (each on a loopback port). */
export interface HaproxyFront {
  /** Names the frontend and its backend, as the stats socket reports them. */
  name: string;
  port: number;
  servers: ReadonlyArray<{ name: string; port: number }>;
}

/** How often HAProxy checks each server's `/ready`, and how many checks in a row take it out or bring it back. */
export const HAPROXY_CHECKS = { intervalMs: 200, fall: 3, rise: 2 } as const;

/**
 * An HAProxy configuration: per front, round robin over its servers, each checked on `GET /ready`
 * (so a draining server leaves rotation within `fall` checks, well within DRAIN_SECONDS).
 * A request whose connection to a server failed was never sent: it is retried at once on another
 * server (`retry-on conn-failure`, `option redispatch 1`), so a server that died costs clients
 * nothing while the checks catch up. Nothing else is retried: a request sent and then left without
 * an answer may have been acted on, and a POST must not be sent twice. WebSockets (graphql-ws)
 * stay open for an hour of silence. With `statsSocket`, servers' states can be read.
 */
export function haproxyConfig(fronts: readonly HaproxyFront[], options: { statsSocket?: string } = {}): string {
  const { intervalMs, fall, rise } = HAPROXY_CHECKS;
  const sections = fronts.map(
    ({ name, port, servers }) => `frontend ${name}
  bind 127.0.0.1:${port}
  default_backend ${name}
backend ${name}
  balance roundrobin
  option httpchk GET /ready
  http-check expect status 200
${servers.map((server) => `  server ${server.name} 127.0.0.1:${server.port} check inter ${intervalMs}ms fall ${fall} rise ${rise}`).join('\n')}
`,
  );
  return `global
  maxconn 4000
${options.statsSocket ? `  stats socket ${options.statsSocket} mode 600 level admin\n` : ''}defaults
  mode http
  retries 3
  retry-on conn-failure
  option redispatch 1
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout tunnel 1h
  timeout check 2s
${sections.join('')}`;
}

/** A server as HAProxy sees it. */
export interface HaproxyServerState {
  /** `UP`, `DOWN`, `MAINT`, or a transition such as `UP 1/3`. */
  status: string;
  /** Its current sessions. */
  sessions: number;
  /** Since this HAProxy process started: connections to it retried, and requests sent elsewhere after failing to connect to it. */
  retries: number;
  redispatches: number;
}

/** Reads every server's state from HAProxy's stats socket, by `<front>/<server>`. */
export function haproxyServers(statsSocket: string): Promise<Map<string, HaproxyServerState>> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = net.connect(statsSocket, () => socket.end('show stat\n'));
    socket.setEncoding('utf8');
    socket.setTimeout(2000, () => socket.destroy(new Error('HAProxy stats socket did not answer within 2 s')));
    socket.on('data', (chunk: string) => (text += chunk));
    socket.once('error', reject);
    socket.once('close', () => {
      const [header, ...rows] = text.trim().split('\n');
      const columns = (header ?? '').replace(/^# /, '').split(',');
      const at = (name: string) => columns.indexOf(name);
      const servers = new Map<string, HaproxyServerState>();
      for (const row of rows) {
        const cells = row.split(',');
        const server = cells[at('svname')];
        if (!server || server === 'FRONTEND' || server === 'BACKEND') continue;
        const count = (column: string) => Number(cells[at(column)] || 0);
        servers.set(`${cells[at('pxname')]}/${server}`, {
          status: cells[at('status')] ?? '',
          sessions: count('scur'),
          retries: count('wretr'),
          redispatches: count('wredis'),
        });
      }
      resolve(servers);
    });
  });
}

/** Starts HAProxy in the foreground on a configuration file (in a process group of its own if `detached`); its output goes to `onLine`. */
export function spawnHaproxy(
  configFile: string,
  onLine: (line: string) => void,
  options: { binary?: string; detached?: boolean } = {},
): ChildProcess {
  const child = spawn(options.binary ?? HAPROXY_BIN, ['-db', '-f', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  for (const stream of [child.stdout, child.stderr]) {
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line) onLine(line);
    });
  }
  child.once('error', (error) => onLine(`haproxy: ${error.message}`));
  return child;
}
