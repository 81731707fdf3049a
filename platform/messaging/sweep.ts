import type { HttpService } from '../http/server.js';
import type { Logger } from '../runtime/logger.js';

/**
 * One background loop: runs `pass` on a timer and whenever nudged, never two passes at once. A
 * nudge during a pass runs one more pass right after it, so work stored meanwhile is not left to
 * the next tick. A pass that fails is logged; the next nudge or tick runs again. Every queue the
 * services keep (the outbox's dispatchers, webhook deliveries) and every scheduled job runs on it.
 */
export class SweepLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly name: string,
    private readonly pass: () => Promise<unknown>,
    private readonly everyMs: number,
    private readonly logger: Logger,
  ) {}

  /** Starts the timer and runs a first pass now, unless `immediately` is false. */
  start(immediately = true): this {
    if (this.timer || this.stopped) return this;
    // A tick while a pass runs is skipped, not queued: only a nudge asks for a pass right after.
    this.timer = setInterval(() => {
      if (!this.running) this.nudge();
    }, this.everyMs);
    this.timer.unref();
    if (immediately) this.nudge();
    return this;
  }

  /** Runs a pass now, or right after the one running. */
  nudge(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .then(
        () => undefined,
        (error: unknown) => this.logger.warn(`${this.name} failed`, { error: (error as Error).message }),
      )
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.nudge();
        }
      });
  }

  /** Waits until no pass runs or is asked for. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops the timer and waits for the pass in flight, so the database is closed after it and not under it. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.again = false;
    await this.idle();
  }
}

/**
 * Runs `task` every `everyMs` while the service runs (a scheduled job: retries that are due, a
 * daily report), and stops it when the service closes, after the run in flight.
 */
export function withRecurringTask(service: HttpService, everyMs: number, task: () => Promise<unknown>, logger: Logger): HttpService {
  const job = new SweepLoop('recurring task', task, everyMs, logger).start(false);
  return {
    ...service,
    close: async () => {
      await job.stop();
      await service.close();
    },
  };
}
