// Supervision of child processes, as compose's restart policy and Kubernetes do it: a process that exits
// without being asked to is started again, after a delay that doubles with each exit in a row.
import type { ChildProcess } from 'node:child_process';
import type { Logger } from '../../platform/runtime/logger.js';

/** The delays between restarts. */
export interface Backoff {
  /** Before the first restart of a run of exits. */
  initialMs: number;
  /** The delay doubles with each exit in a row, up to this. */
  maxMs: number;
  /** A process that stayed up this long starts a new run: its next exit waits `initialMs` again. */
  resetAfterMs: number;
}

/** Half a second, doubling to 30 s; a minute up resets it. */
export const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 30_000, resetAfterMs: 60_000 };

/** The delay before restart `attempt` of a run (1 for the first). */
export function backoffDelay(attempt: number, backoff: Backoff = DEFAULT_BACKOFF): number {
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, attempt - 1));
}

/** How a supervisor starts its processes and tells about them. */
export interface SupervisorOptions<Name extends string> {
  /** Starts the named process, the first time and every time again. */
  spawn: (name: Name) => ChildProcess;
  /** Each exit (`warn`, `member exited`) and restart (`info`, `member restarted`) is a line here, with `member`. */
  logger: Logger;
  backoff?: Partial<Backoff>;
  /** Called after an exit nobody asked for is logged, with how it ended (`killed by SIGKILL`, `exited with 1`). */
  onUnexpectedExit?: (name: Name, how: string) => void;
}

/** Named child processes kept running. */
export interface Supervisor<Name extends string> {
  /** Starts `name` and supervises it from now on. Throws while it runs or waits for a restart, and once halted. */
  start(name: Name): ChildProcess;
  /** The running process of `name`; undefined while it is stopped or waiting for a restart. */
  child(name: Name): ChildProcess | undefined;
  /**
   * Stops supervising `name` (a pending restart is cancelled), sends it `signal` (SIGTERM by default)
   * and, with `graceMs`, SIGKILL after that long. Resolves once it has exited, saying how, or with
   * `not running`.
   */
  stop(name: Name, signal?: NodeJS.Signals, graceMs?: number): Promise<string>;
  /** Ends supervision: pending restarts are cancelled and nothing is started again. Running processes go on until stopped. */
  halt(): void;
}

interface Watched {
  child: ChildProcess | undefined;
  exited: Promise<string>;
  /** Cleared by `stop` and `halt`: an exit is then expected, and nothing is started again. */
  supervised: boolean;
  startedAt: number;
  /** Restarts in the current run of exits. */
  attempt: number;
  timer: NodeJS.Timeout | undefined;
}

const describeExit = (code: number | null, signal: NodeJS.Signals | null) => (signal ? `killed by ${signal}` : `exited with ${code}`);

/**
 * Supervises named child processes: one that exits while supervised is logged and started again with
 * `spawn` after `backoffDelay` (the run of exits counted per name, reset once a process has stayed up
 * `resetAfterMs`). `stop` and `halt` end supervision before any signal is sent, so a shutdown restarts nothing.
 */
export function createSupervisor<Name extends string>(options: SupervisorOptions<Name>): Supervisor<Name> {
  const backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
  const watched = new Map<Name, Watched>();
  let halted = false;

  const launch = (name: Name, entry: Watched) => {
    const child = options.spawn(name);
    entry.child = child;
    entry.startedAt = performance.now();
    entry.exited = new Promise((resolve) => {
      let ended = false;
      const end = (code: number | null, signal: NodeJS.Signals | null) => {
        if (ended) return;
        ended = true;
        if (entry.child === child) entry.child = undefined;
        const how = describeExit(code, signal);
        resolve(how);
        if (entry.supervised && !halted) restartLater(name, entry, code, signal, how);
      };
      child.once('exit', end);
      // A process that could not be started at all may never emit 'exit'.
      child.once('error', () => {
        if (child.pid === undefined) end(null, null);
      });
    });
    return child;
  };

  const restartLater = (name: Name, entry: Watched, code: number | null, signal: NodeJS.Signals | null, how: string) => {
    const uptimeMs = Math.round(performance.now() - entry.startedAt);
    entry.attempt = uptimeMs >= backoff.resetAfterMs ? 1 : entry.attempt + 1;
    const delayMs = backoffDelay(entry.attempt, backoff);
    options.logger.warn('member exited', { member: name, code, signal, uptimeMs, attempt: entry.attempt, delayMs });
    options.onUnexpectedExit?.(name, how);
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      if (!entry.supervised || halted) return;
      const child = launch(name, entry);
      options.logger.info('member restarted', { member: name, attempt: entry.attempt, pid: child.pid });
    }, delayMs);
  };

  return {
    start: (name) => {
      if (halted) throw new Error(`cannot start ${name}: supervision has ended`);
      const previous = watched.get(name);
      if (previous?.child) throw new Error(`${name} is running`);
      if (previous?.timer) throw new Error(`${name} is waiting for a restart`);
      const entry: Watched = {
        child: undefined,
        exited: Promise.resolve('not running'),
        supervised: true,
        startedAt: 0,
        attempt: 0,
        timer: undefined,
      };
      watched.set(name, entry);
      return launch(name, entry);
    },
    child: (name) => watched.get(name)?.child,
    stop: async (name, signal = 'SIGTERM', graceMs) => {
      const entry = watched.get(name);
      if (!entry) return 'not running';
      entry.supervised = false;
      clearTimeout(entry.timer);
      entry.timer = undefined;
      const { child } = entry;
      if (!child) return 'not running';
      child.kill(signal);
      const timer = graceMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), graceMs);
      const how = await entry.exited;
      clearTimeout(timer);
      return how;
    },
    halt: () => {
      halted = true;
      for (const entry of watched.values()) {
        entry.supervised = false;
        clearTimeout(entry.timer);
        entry.timer = undefined;
      }
    },
  };
}
