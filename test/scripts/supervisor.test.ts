import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/runtime/logger.js';
import { backoffDelay, createSupervisor, type Backoff, type Supervisor } from '../../scripts/lib/supervisor.js';
import { until } from '../support/harness.js';

// Real child processes: tiny Node.js scripts that exit, crash or wait to be stopped.
const EXITS = 'process.exit(3)';
const WAITS = "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000); console.log('ready')";
const IGNORES_SIGTERM = "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('ready')";
/** Short delays, so that a run of restarts takes a moment. */
const FAST: Backoff = { initialMs: 50, maxMs: 200, resetAfterMs: 10_000 };

interface LogLine {
  level: string;
  service: string;
  msg: string;
  member: string;
  code: number | null;
  signal: string | null;
  attempt: number;
  delayMs: number;
  pid: number;
}

/** A supervisor over `node -e <script>`, where `scriptOf` picks the script of each start; it records starts and log lines. */
function harness(scriptOf: (start: number) => string, backoff: Partial<Backoff> = FAST) {
  const starts: Array<{ at: number; child: ChildProcess }> = [];
  const lines: LogLine[] = [];
  const unexpected: string[] = [];
  const supervisor: Supervisor<'worker'> = createSupervisor<'worker'>({
    spawn: () => {
      const child = spawn(process.execPath, ['-e', scriptOf(starts.length)], { stdio: ['ignore', 'pipe', 'inherit'] });
      starts.push({ at: performance.now(), child });
      return child;
    },
    logger: createLogger('info', { service: 'cluster' }, (line) => void lines.push(JSON.parse(line) as LogLine)),
    backoff,
    onUnexpectedExit: (name, how) => void unexpected.push(`${name} ${how}`),
  });
  running.push(supervisor);
  return { supervisor, starts, lines, unexpected };
}
const running: Array<Supervisor<'worker'>> = [];
const readyOf = async (child: ChildProcess) => {
  await once(child.stdout!, 'data');
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(async () => {
  for (const supervisor of running.splice(0)) {
    supervisor.halt();
    await supervisor.stop('worker', 'SIGKILL');
  }
});

describe('backoffDelay', () => {
  it('doubles from the first delay up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((attempt) => backoffDelay(attempt))).toEqual([500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    expect([1, 2, 3, 4].map((attempt) => backoffDelay(attempt, FAST))).toEqual([50, 100, 200, 200]);
  });
});

describe('the supervisor', () => {
  it('starts a process that keeps exiting again and again, each time later, logging every exit and restart', async () => {
    const { supervisor, starts, lines, unexpected } = harness(() => EXITS);
    supervisor.start('worker');
    await until(
      async () => starts.length,
      (count) => count >= 5,
      10_000,
    );
    supervisor.halt();
    const exits = lines.filter((line) => line.msg === 'member exited').slice(0, 4);
    expect(
      exits.map(({ level, service, member, code, signal, attempt, delayMs }) => ({
        level,
        service,
        member,
        code,
        signal,
        attempt,
        delayMs,
      })),
    ).toEqual(
      [50, 100, 200, 200].map((delayMs, i) => ({
        level: 'warn',
        service: 'cluster',
        member: 'worker',
        code: 3,
        signal: null,
        attempt: i + 1,
        delayMs,
      })),
    );
    const restarts = lines.filter((line) => line.msg === 'member restarted').slice(0, 4);
    expect(restarts.map(({ level, member, attempt }) => ({ level, member, attempt }))).toEqual(
      [1, 2, 3, 4].map((attempt) => ({ level: 'info', member: 'worker', attempt })),
    );
    expect(restarts.map((line) => line.pid)).toEqual(starts.slice(1, 5).map((start) => start.child.pid));
    // Each start came no sooner than its delay after the one before (which lived a moment).
    for (const [i, delayMs] of [50, 100, 200, 200].entries()) expect(starts[i + 1]!.at - starts[i]!.at).toBeGreaterThanOrEqual(delayMs);
    expect(unexpected.slice(0, 2)).toEqual(['worker exited with 3', 'worker exited with 3']);
  });

  it('starts a killed process again, with a process id of its own', async () => {
    const { supervisor, starts, lines } = harness(() => WAITS);
    const first = supervisor.start('worker');
    await readyOf(first);
    process.kill(first.pid!, 'SIGKILL');
    await until(
      async () => starts.length,
      (count) => count === 2,
    );
    const second = supervisor.child('worker');
    expect(second?.pid).toBeDefined();
    expect(second?.pid).not.toBe(first.pid);
    expect(lines.find((line) => line.msg === 'member exited')).toMatchObject({
      member: 'worker',
      code: null,
      signal: 'SIGKILL',
      attempt: 1,
      delayMs: 50,
    });
  });

  it('starts a run of exits over once the process has stayed up long enough', async () => {
    // Two quick exits, then one after staying up past resetAfterMs, then a quick one again.
    const { supervisor, starts, lines } = harness((start) => (start === 2 ? 'setTimeout(() => process.exit(4), 1200)' : EXITS), {
      ...FAST,
      // Well above a quick exit's uptime (Node.js starting), even on a loaded machine.
      resetAfterMs: 1000,
    });
    supervisor.start('worker');
    await until(
      async () => starts.length,
      (count) => count >= 5,
    );
    supervisor.halt();
    const exits = lines.filter((line) => line.msg === 'member exited').slice(0, 4);
    expect(exits.map(({ code, attempt, delayMs }) => ({ code, attempt, delayMs }))).toEqual([
      { code: 3, attempt: 1, delayMs: 50 },
      { code: 3, attempt: 2, delayMs: 100 },
      { code: 4, attempt: 1, delayMs: 50 },
      { code: 3, attempt: 2, delayMs: 100 },
    ]);
  });

  it('does not start a process it was asked to stop', async () => {
    const { supervisor, starts, lines, unexpected } = harness(() => WAITS);
    await readyOf(supervisor.start('worker'));
    expect(await supervisor.stop('worker')).toBe('exited with 0');
    await sleep(300);
    expect(starts.length).toBe(1);
    expect(supervisor.child('worker')).toBeUndefined();
    expect(lines).toEqual([]);
    expect(unexpected).toEqual([]);
    expect(await supervisor.stop('worker')).toBe('not running');
    // Started by hand, it is supervised again.
    const again = supervisor.start('worker');
    await readyOf(again);
    process.kill(again.pid!, 'SIGKILL');
    await until(
      async () => starts.length,
      (count) => count === 3,
    );
  });

  it('kills a process that outlasts its grace period', async () => {
    const { supervisor } = harness(() => IGNORES_SIGTERM);
    await readyOf(supervisor.start('worker'));
    expect(await supervisor.stop('worker', 'SIGTERM', 200)).toBe('killed by SIGKILL');
  });

  it('starts nothing once halted: neither a process that dies afterwards nor a restart already waiting', async () => {
    const { supervisor, starts } = harness(() => WAITS);
    const child = supervisor.start('worker');
    await readyOf(child);
    supervisor.halt();
    process.kill(child.pid!, 'SIGKILL');
    await once(child, 'exit');
    await sleep(300);
    expect(starts.length).toBe(1);
    expect(() => supervisor.start('worker')).toThrow(/supervision has ended/);

    const waiting = harness(() => EXITS, { ...FAST, initialMs: 200 });
    const first = waiting.supervisor.start('worker');
    await once(first, 'exit');
    // The restart is pending now (200 ms): halting cancels it.
    expect(waiting.lines.map((line) => line.msg)).toEqual(['member exited']);
    waiting.supervisor.halt();
    await sleep(400);
    expect(waiting.starts.length).toBe(1);
  });

  it('refuses to start a process that runs or waits for a restart', async () => {
    const { supervisor } = harness(() => WAITS);
    const child = supervisor.start('worker');
    expect(() => supervisor.start('worker')).toThrow(/is running/);
    await readyOf(child);
    process.kill(child.pid!, 'SIGKILL');
    await once(child, 'exit');
    expect(() => supervisor.start('worker')).toThrow(/waiting for a restart/);
  });
});
