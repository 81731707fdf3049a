import type { Collection, Db, Filter, OptionalUnlessRequiredId } from 'mongodb';
import type { GraphClient } from '../graphql/graph-client.js';
import type { Logger } from '../runtime/logger.js';
import { insertIfAbsent } from '../mongo/mongo.js';
import { newId } from '../security/secrets.js';
import type { BusEvent, EventBus } from './event-bus.js';
import { FORWARDED_TYPES, routeOf, type EventAudience, type EventPayloads, type EventType, type OutboxEvent } from './events.js';
import { SweepLoop } from './sweep.js';

const SWEEP_EVERY_MS = 3000;
const RETENTION_MS = 7 * 24 * 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;

/** The outbox collection of a subgraph's database. */
export function outboxCollection(db: Db): Collection<OutboxEvent> {
  return db.collection<OutboxEvent>('outbox');
}

/**
 * Carries outbox events somewhere: to the event bus, or through the graph to the subgraph that
 * consumes them. Delivery is at least once: an event carried but not yet marked when the process
 * dies is carried again, with the same id, and every consumer drops repeats by id.
 */
export interface Dispatcher {
  /** Names it in logs. */
  readonly name: string;
  /** The outbox field it sets once it has carried an event. */
  readonly mark: 'dtsPublished' | 'dtsForwarded';
  /** The event types it carries; every event unmarked on its field when absent. */
  readonly types?: readonly EventType[];
  /** Events per `send`. */
  readonly batch: number;
  /**
   * Carries an event this process has just stored at once, on its own (a local publish), rather
   * than on the next pass with whatever else is pending (a remote call, batched).
   */
  readonly eager: boolean;
  send(events: OutboxEvent[]): Promise<void>;
}

/** The outbox engines of this process by database name, so that a stored event reaches its own. */
const engines = new Map<string, Set<Outbox>>();

/**
 * Stores an event in the subgraph's outbox, in the write path of the state change it reports.
 * With an `id` derived from the state change (say `<svcTransactionId>:return`) the write happens
 * once, so a retry after a failure between the state change and its event records the event
 * once. The marks of the routes its type does not take are set at once, so no dispatcher waits
 * for it.
 */
export async function recordEvent<T extends EventType>(db: Db, type: T, audience: EventAudience, payload: EventPayloads[T], id?: string): Promise<void> {
  const now = new Date();
  const route = routeOf(type);
  const event: OutboxEvent<T> = { _id: id ?? newId('evt_'), type, audience, payload, dtsCreated: now, dtsPublished: route.bus ? null : now, dtsForwarded: route.forwarded ? null : now };
  const outbox = outboxCollection(db);
  const stored = event as OptionalUnlessRequiredId<OutboxEvent>;
  // With an id, a retry finds the event stored already: it was carried then, or a sweep will.
  if (id && !(await insertIfAbsent(outbox, stored))) return;
  if (!id) await outbox.insertOne(stored);
  // Carried now by this process's engine; another process's sweep carries it if this one dies first.
  const [engine] = engines.get(db.databaseName) ?? [];
  engine?.stored(event as OutboxEvent);
}

/** An outbox event as the bus carries it. */
export function toBusEvent(event: OutboxEvent): BusEvent {
  return { id: event._id, type: event.type, audience: event.audience, payload: event.payload as unknown as Record<string, unknown>, dtsCreated: event.dtsCreated.toISOString() };
}

/** Publishes every event the bus carries, one at a time, in the order stored. */
export function busDispatcher(bus: EventBus): Dispatcher {
  return {
    name: 'event bus',
    mark: 'dtsPublished',
    batch: 100,
    eager: true,
    async send(events) {
      for (const event of events) await bus.publish(toBusEvent(event));
    },
  };
}

/** Forwards some event types through the graph, a batch per call of `mutation` with the variables `variablesOf` builds. */
export function graphForwarder<T extends EventType>(options: {
  name: string;
  types: readonly T[];
  batch: number;
  graph: GraphClient;
  mutation: string;
  variablesOf: (events: Array<OutboxEvent<T>>) => Record<string, unknown>;
}): Dispatcher {
  for (const type of options.types) {
    if (!routeOf(type).forwarded) throw new Error(`${type} is not a forwarded event: mark it so in EVENT_ROUTES.`);
  }
  return {
    name: options.name,
    mark: 'dtsForwarded',
    types: options.types,
    batch: options.batch,
    eager: false,
    send: async (events) => {
      await options.graph.request(options.mutation, options.variablesOf(events as Array<OutboxEvent<T>>));
    },
  };
}

/** One dispatcher at work: its sweep, and the events it carried at once that are not yet marked. */
interface Lane {
  dispatcher: Dispatcher;
  sweep: SweepLoop;
  unmarked: Set<string>;
  marking: Promise<void> | null;
}

/**
 * A subgraph's outbox and the dispatchers that carry it: one claim, mark and sweep engine for
 * every event, whichever way it goes. An event this process stores goes to each of its
 * dispatchers at once (eager ones carry it themselves, the others are nudged); a sweep per
 * dispatcher on a timer carries, oldest first, what a process that died before carrying left
 * behind, or what a failed attempt left. Each sweep reads the unmarked events by an index on
 * its mark field. Carried events are kept a week, then deleted.
 */
export class Outbox {
  private readonly outbox: Collection<OutboxEvent>;
  private readonly lanes: Lane[];
  private readonly pruning: SweepLoop;

  constructor(private readonly db: Db, dispatchers: readonly Dispatcher[], private readonly logger: Logger, everyMs = SWEEP_EVERY_MS) {
    this.outbox = outboxCollection(db);
    this.lanes = dispatchers.map((dispatcher) => {
      const lane: Lane = { dispatcher, unmarked: new Set(), marking: null, sweep: new SweepLoop(`${dispatcher.name} sweep`, () => this.sweep(lane), everyMs, logger) };
      return lane;
    });
    this.pruning = new SweepLoop('outbox pruning', () => this.prune(), PRUNE_EVERY_MS, logger);
  }

  /** The indexes of the sweeps (unmarked events, oldest first, by field and by type) and of the pruning. */
  static async createIndexes(db: Db): Promise<void> {
    await outboxCollection(db).createIndex({ dtsPublished: 1, dtsCreated: 1 });
    await outboxCollection(db).createIndex({ type: 1, dtsForwarded: 1, dtsCreated: 1 });
  }

  start(): this {
    const name = this.db.databaseName;
    if (!engines.has(name)) engines.set(name, new Set());
    engines.get(name)!.add(this);
    for (const lane of this.lanes) lane.sweep.start();
    this.pruning.start();
    return this;
  }

  /** Hands an event this process has just stored to each dispatcher that carries it. */
  stored(event: OutboxEvent): void {
    for (const lane of this.lanes) {
      const { dispatcher } = lane;
      if (event[dispatcher.mark] !== null || (dispatcher.types && !dispatcher.types.includes(event.type))) continue;
      if (!dispatcher.eager) {
        lane.sweep.nudge();
        continue;
      }
      void dispatcher
        .send([event])
        .then(() => this.markSoon(lane, event._id))
        .catch((error: unknown) => this.logger.warn(`event left to the ${dispatcher.name} sweep`, { eventId: event._id, error: (error as Error).message }));
    }
  }

  /** Runs every dispatcher's sweep now. */
  nudge(): void {
    for (const lane of this.lanes) lane.sweep.nudge();
  }

  /** Waits for the sweeps and the marking writes under way. */
  async idle(): Promise<void> {
    for (const lane of this.lanes) {
      while (lane.marking) await lane.marking;
      await lane.sweep.idle();
    }
  }

  async stop(): Promise<void> {
    engines.get(this.db.databaseName)?.delete(this);
    await Promise.all([...this.lanes.map((lane) => lane.sweep.stop()), this.pruning.stop()]);
    await this.idle();
  }

  /** Marks an event carried: at once when no marking write runs, else with the others in the next one. */
  private markSoon(lane: Lane, id: string): void {
    lane.unmarked.add(id);
    lane.marking ??= this.markUnmarked(lane);
  }

  /**
   * Writes marks until none are left. `marking` is cleared in the same synchronous step that
   * finds none, so an id added at any later moment starts a new write.
   */
  private async markUnmarked(lane: Lane): Promise<void> {
    for (;;) {
      if (lane.unmarked.size === 0) {
        lane.marking = null;
        return;
      }
      const ids = [...lane.unmarked].slice(0, lane.dispatcher.batch);
      for (const id of ids) lane.unmarked.delete(id);
      try {
        await this.markCarried(lane.dispatcher, ids);
      } catch (error) {
        // Carried but unmarked: the sweep carries them again, and consumers drop repeats by id.
        this.logger.warn(`events left to the ${lane.dispatcher.name} sweep`, { events: ids.length, error: (error as Error).message });
      }
    }
  }

  /** Records events as carried by a dispatcher: one write for them all. */
  private async markCarried(dispatcher: Dispatcher, ids: string[]): Promise<void> {
    await this.outbox.updateMany({ _id: { $in: ids } }, { $set: { [dispatcher.mark]: new Date() } });
  }

  private async sweep(lane: Lane): Promise<void> {
    const { dispatcher } = lane;
    const pending = { [dispatcher.mark]: null, ...(dispatcher.types ? { type: { $in: dispatcher.types } } : {}) } as Filter<OutboxEvent>;
    for (;;) {
      const events = await this.outbox.find(pending).sort({ dtsCreated: 1, _id: 1 }).limit(dispatcher.batch).toArray();
      if (events.length === 0) return;
      await dispatcher.send(events);
      await this.markCarried(dispatcher, events.map((event) => event._id));
      if (events.length < dispatcher.batch) return;
    }
  }

  /** Deletes the events carried everywhere they go more than a week ago. */
  private async prune(): Promise<void> {
    const cutoff = new Date(Date.now() - RETENTION_MS);
    await this.outbox.deleteMany({ dtsPublished: { $lt: cutoff }, $or: [{ type: { $nin: FORWARDED_TYPES } }, { dtsForwarded: { $ne: null } }] });
  }
}
export type { OutboxEvent } from './events.js';
