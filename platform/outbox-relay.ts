import type { Db } from 'mongodb';
import type { BusEvent, EventBus } from './event-bus.js';
import type { Logger } from './logger.js';
import type { OutboxEvent } from './outbox-event.js';

const BATCH = 100;
const RETENTION_MS = 7 * 24 * 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Relays by database name, so that a stored event can ask its database's relay to publish at once. */
const relays = new Map<string, Set<OutboxRelay>>();

/**
 * Publishes an event just stored (called by `recordEvent`) through one relay of its database in
 * this process, if any; otherwise the relay of whichever process runs one finds it on its sweep.
 */
export function publishStored(databaseName: string, event: OutboxEvent): void {
  const [relay] = relays.get(databaseName) ?? [];
  relay?.publishNow(event);
}

/**
 * Publishes a subgraph's outbox on the event bus. An event stored by this process is published at
 * once and marked `dtsPublished` (the events published while one marking write runs are marked
 * together by the next, `_id` in a list); a sweep on a timer publishes, oldest first,
 * what a process that died before publishing left behind (or whose publish failed). Delivery is at
 * least once: an event published but not yet marked when the process dies is published again,
 * with the same id, and subscribers drop repeats by id. The sweep reads the unpublished events by
 * the `{dtsPublished, dtsCreated}` index (on the embedded FerretDB too, with the project's patch).
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private lastPruned = 0;
  /** Published at once, not yet marked. */
  private unmarked = new Set<string>();
  private marking: Promise<void> | null = null;

  constructor(private readonly db: Db, private readonly bus: EventBus, private readonly logger: Logger, private readonly intervalMs = 3000) {}

  /** Publishes one stored event now and marks it; a failure leaves it to the sweep. */
  publishNow(event: OutboxEvent): void {
    void this.bus
      .publish(toBusEvent(event))
      .then(() => this.markPublished(event._id))
      .catch((error: unknown) => this.logger.warn('event left to the relay sweep', { eventId: event._id, error: (error as Error).message }));
  }

  /** Marks an event published: at once when no marking write runs, else with the others in the next one. */
  private markPublished(id: string): void {
    this.unmarked.add(id);
    if (!this.marking) this.marking = this.markUnmarked();
  }

  /**
   * Writes marks until none are left. `marking` is cleared in the same synchronous step that finds
   * none, so an id added at any later moment starts a new write.
   */
  private async markUnmarked(): Promise<void> {
    for (;;) {
      if (this.unmarked.size === 0) {
        this.marking = null;
        return;
      }
      const ids = [...this.unmarked].slice(0, BATCH);
      for (const id of ids) this.unmarked.delete(id);
      try {
        await this.markWritten(ids);
      } catch (error) {
        // Published but unmarked: the sweep publishes them again, and subscribers drop repeats by id.
        this.logger.warn('events left to the relay sweep', { events: ids.length, error: (error as Error).message });
      }
    }
  }

  /** Records events as published: one write for them all. */
  private async markWritten(ids: string[]): Promise<void> {
    await this.db.collection<OutboxEvent>('outbox').updateMany({ _id: { $in: ids } }, { $set: { dtsPublished: new Date() } });
  }

  /** The index of the sweep (unpublished events, oldest first) and of the pruning (published before a cutoff). */
  static async createIndexes(db: Db): Promise<void> {
    await db.collection('outbox').createIndex({ dtsPublished: 1, dtsCreated: 1 });
  }

  start(): this {
    const name = this.db.databaseName;
    if (!relays.has(name)) relays.set(name, new Set());
    relays.get(name)!.add(this);
    this.timer = setInterval(() => this.nudge(), this.intervalMs);
    this.timer.unref();
    this.nudge();
    return this;
  }

  /** Runs a pass now, or right after the one running. */
  nudge(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch((error: unknown) => this.logger.warn('outbox relay pass failed', { error: (error as Error).message }))
      .finally(() => {
        this.running = null;
        if (this.again && this.timer) {
          this.again = false;
          this.nudge();
        }
      });
  }

  /** Waits for the pass and the marking write under way, if any. */
  async idle(): Promise<void> {
    while (this.running || this.marking) await (this.running ?? this.marking);
  }

  /** Published events are kept a week (ACH events until compliance has them too), then deleted. */
  private async prune(): Promise<void> {
    const cutoff = new Date(Date.now() - RETENTION_MS);
    await this.db.collection<OutboxEvent>('outbox').deleteMany({
      dtsPublished: { $lt: cutoff },
      $or: [{ type: { $nin: ['ach.debit', 'ach.return'] } }, { dtsForwarded: { $ne: null } }],
    });
  }

  private async pass(): Promise<void> {
    if (Date.now() - this.lastPruned > PRUNE_EVERY_MS) {
      this.lastPruned = Date.now();
      await this.prune();
    }
    const outbox = this.db.collection<OutboxEvent>('outbox');
    for (;;) {
      const events = await outbox.find({ dtsPublished: null }).sort({ dtsCreated: 1, _id: 1 }).limit(BATCH).toArray();
      if (events.length === 0) return;
      const published: string[] = [];
      try {
        for (const event of events) {
          await this.bus.publish(toBusEvent(event));
          published.push(event._id);
        }
      } finally {
        if (published.length > 0) await this.markWritten(published);
      }
      if (events.length < BATCH) return;
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    relays.get(this.db.databaseName)?.delete(this);
    await this.idle();
  }
}

export function toBusEvent(event: OutboxEvent): BusEvent {
  return { id: event._id, type: event.type, audience: event.audience, payload: event.payload, dtsCreated: event.dtsCreated.toISOString() };
}
