import { ApolloServerErrorCode } from '@apollo/server/errors';
import { ErrorCode } from '../contracts/errors.js';
import { GraphQLError } from 'graphql';
import type { Collection, Db, Filter, OptionalUnlessRequiredId } from 'mongodb';
import type { GraphClient } from '../contracts/graph.js';
import type { Logger } from '../runtime/logger.js';
import { insertIfAbsent } from '../mongo/mongo.js';
import { newId } from '../security/secrets.js';
import type { BusEvent, EventBus } from './event-bus.js';
import { FORWARDED_TYPES, routeOf, type EventAudience, type EventPayloads, type EventType, type OutboxEvent } from '../contracts/events.js';
import { SweepLoop } from './sweep.js';
import { inSpan, SpanKind } from '../telemetry/tracing.js';
import { reportQueueDepth } from '../telemetry/metrics.js';

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
  readonly mark: OutboxMark;
  /** The event types it carries; every event unmarked on its field when absent. */
  readonly types?: readonly EventType[];
  /** Events per `send`. */
  readonly batch: number;
  /**
   * Carries an event this process has just stored at once, on its own (a local publish), rather
   * than on the next pass with whatever else is pending (a remote call, batched).
   */
  readonly eager: boolean;
  /** Carries the events in order; a `CarriedInPart` says how many went before the failure. */
  send(events: OutboxEvent[]): Promise<void>;
  /**
   * Whether the receiver refused events for what they hold, so that the same events would be
   * refused again (a record the receiver's schema does not accept), rather than being away.
   */
  refuses?(error: unknown): boolean;
}

/** A send that failed after carrying the first `carried` events. */
export class CarriedInPart extends Error {
  constructor(
    readonly carried: number,
    override readonly cause: unknown,
  ) {
    super((cause as Error).message);
  }
}

/** The fields dispatchers mark events carried on: published to the bus, forwarded through the graph. */
export type OutboxMark = 'dtsPublished' | 'dtsForwarded';

/** Where an outbox keeps its events, and whether it deletes them once carried. */
export interface OutboxOptions {
  /** Sweep period. */
  everyMs?: number;
  /**
   * The collection of events; `outbox` by default. A service whose record of a state change is
   * itself the event (a decided card message) keeps it there, so that one write stores both.
   */
  collection?: string;
  /** Deletes events carried everywhere a week ago; off where the events are the service's own records. */
  prune?: boolean;
}

/** The error codes a receiver answers when an event's content is at fault, not the receiver's state. */
const REFUSAL_CODES: ReadonlySet<string> = new Set([
  ErrorCode.VALIDATION_FAILED,
  ErrorCode.BAD_REQUEST,
  ErrorCode.REQUIRED_ELEMENT_MISSING,
  ApolloServerErrorCode.BAD_USER_INPUT,
  ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED,
]);

/** The outbox engines of this process by database name, so that a stored event reaches its own. */
const engines = new Map<string, Set<Outbox>>();

/**
 * Stores an event in the subgraph's outbox, in the write path of the state change it reports.
 * With an `id` derived from the state change (say `<svcTransactionId>:return`) the write happens
 * once, so a retry after a failure between the state change and its event records the event
 * once. The marks of the routes its type does not take are set at once, so no dispatcher waits
 * for it.
 */
export async function recordEvent<T extends EventType>(
  db: Db,
  type: T,
  audience: EventAudience,
  payload: EventPayloads[T],
  id?: string,
): Promise<void> {
  const now = new Date();
  const route = routeOf(type);
  const event: OutboxEvent<T> = {
    _id: id ?? newId('evt_'),
    type,
    audience,
    payload,
    dtsCreated: now,
    dtsPublished: route.bus ? null : now,
    dtsForwarded: route.forwarded ? null : now,
  };
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
function toBusEvent(event: OutboxEvent): BusEvent {
  return {
    id: event._id,
    type: event.type,
    audience: event.audience,
    payload: event.payload as unknown as Record<string, unknown>,
    dtsCreated: event.dtsCreated.toISOString(),
  };
}

/** Publishes every event the bus carries, one at a time, in the order stored. */
export function busDispatcher(bus: EventBus): Dispatcher {
  return {
    name: 'event bus',
    mark: 'dtsPublished',
    batch: 100,
    eager: true,
    async send(events) {
      for (const [carried, event] of events.entries()) {
        try {
          await inSpan(
            `publish ${event.type}`,
            SpanKind.PRODUCER,
            { 'messaging.system': 'banking-graph-bus', 'messaging.destination.name': event.type, 'messaging.message.id': event._id },
            () => bus.publish(toBusEvent(event)),
          );
        } catch (error) {
          throw new CarriedInPart(carried, error);
        }
      }
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
    refuses: (error) => error instanceof GraphQLError && REFUSAL_CODES.has(String(error.extensions.code)),
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
 * A subgraph's outbox and the dispatchers that carry it: one mark and sweep engine for every
 * event, whichever way it goes. An event this process stores goes to each of its dispatchers at
 * once (eager ones carry it themselves, the others are nudged); a sweep per dispatcher on a timer
 * carries, oldest first, what a process that died before carrying left behind, or what a failed
 * attempt left. Each sweep reads the unmarked events by an index on its mark field. Nothing is
 * claimed: replicas may carry the same event twice, and consumers drop repeats by id. An event
 * its receiver refuses for its content is parked (marked, with its `refusal`), so that it does not
 * hold up the events behind it; docs/operations.md says how to carry it again. Carried events are
 * kept a week, parked ones until an operator acts, then deleted.
 */
export class Outbox {
  private readonly outbox: Collection<OutboxEvent>;
  private readonly lanes: Lane[];
  private readonly pruning: SweepLoop;
  /** Events this process carries at once, until each is marked or left to the sweep. */
  private readonly carrying = new Set<Promise<void>>();
  private stopping = false;
  private unreport: Array<() => void> = [];

  private readonly prunes: boolean;

  constructor(
    private readonly db: Db,
    dispatchers: readonly Dispatcher[],
    private readonly logger: Logger,
    options: OutboxOptions = {},
  ) {
    const { everyMs = SWEEP_EVERY_MS, collection = 'outbox', prune = true } = options;
    this.outbox = db.collection<OutboxEvent>(collection);
    this.prunes = prune;
    this.lanes = dispatchers.map((dispatcher) => {
      const lane: Lane = {
        dispatcher,
        unmarked: new Set(),
        marking: null,
        sweep: new SweepLoop(`${dispatcher.name} sweep`, () => this.sweep(lane), everyMs, logger),
      };
      return lane;
    });
    this.pruning = new SweepLoop('outbox pruning', () => this.prune(), PRUNE_EVERY_MS, logger);
  }

  /** The indexes of the sweeps (unmarked events, oldest first, by field and by type) and of the pruning. */
  static async createIndexes(
    db: Db,
    collection = 'outbox',
    marks: readonly OutboxMark[] = ['dtsPublished', 'dtsForwarded'],
  ): Promise<void> {
    const events = db.collection(collection);
    if (marks.includes('dtsPublished')) await events.createIndex({ dtsPublished: 1, dtsCreated: 1 });
    for (const mark of marks.filter((m) => m !== 'dtsPublished')) await events.createIndex({ type: 1, [mark]: 1, dtsCreated: 1 });
  }

  start(): this {
    const name = this.db.databaseName;
    if (!engines.has(name)) engines.set(name, new Set());
    // recordEvent stores in `outbox`: only engines of that collection carry what it stores.
    if (this.outbox.collectionName === 'outbox') engines.get(name)!.add(this);
    // The bus sweeps at once; forwarding waits a tick, for the gateway it goes through to be up.
    for (const lane of this.lanes) lane.sweep.start(lane.dispatcher.eager);
    if (this.prunes) this.pruning.start();
    this.unreport = this.lanes.map(({ dispatcher }) =>
      reportQueueDepth(name, `${this.outbox.collectionName}: ${dispatcher.name}`, () =>
        this.outbox.countDocuments(this.pendingFor(dispatcher)),
      ),
    );
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
      const carrying = dispatcher
        .send([event])
        .then(() => this.markSoon(lane, event._id))
        .catch((error: unknown) =>
          this.logger.warn(`event left to the ${dispatcher.name} sweep`, { eventId: event._id, error: (error as Error).message }),
        )
        .finally(() => this.carrying.delete(carrying));
      this.carrying.add(carrying);
    }
  }

  /** Runs every dispatcher's sweep now. */
  nudge(): void {
    for (const lane of this.lanes) lane.sweep.nudge();
  }

  /** Waits for the events carried at once, the sweeps and the marking writes under way. */
  async idle(): Promise<void> {
    while (this.carrying.size > 0) await Promise.all(this.carrying);
    for (const lane of this.lanes) {
      while (lane.marking) await lane.marking;
      await lane.sweep.idle();
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const stop of this.unreport) stop();
    engines.get(this.db.databaseName)?.delete(this);
    await Promise.all([...this.lanes.map((lane) => lane.sweep.stop()), this.pruning.stop()]);
    await this.idle();
  }

  /** Marks an event carried: at once when no marking write runs, else with the others in the next one. */
  private markSoon(lane: Lane, id: string): void {
    lane.unmarked.add(id);
    // After stop the database may be closed: the sweep of the next start carries it again.
    if (this.stopping) return;
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

  /** The events a dispatcher has yet to carry. */
  private pendingFor(dispatcher: Dispatcher): Filter<OutboxEvent> {
    return { [dispatcher.mark]: null, ...(dispatcher.types ? { type: { $in: dispatcher.types } } : {}) };
  }

  private async sweep(lane: Lane): Promise<void> {
    const { dispatcher } = lane;
    const pending = this.pendingFor(dispatcher);
    for (;;) {
      const events = await this.outbox.find(pending).sort({ dtsCreated: 1, _id: 1 }).limit(dispatcher.batch).toArray();
      if (events.length === 0) return;
      try {
        await dispatcher.send(events);
      } catch (error) {
        if (error instanceof CarriedInPart && error.carried > 0)
          await this.markCarried(
            dispatcher,
            events.slice(0, error.carried).map((event) => event._id),
          );
        if (!dispatcher.refuses?.(error)) throw error;
        await this.carryOneByOne(dispatcher, events);
        continue;
      }
      await this.markCarried(
        dispatcher,
        events.map((event) => event._id),
      );
      // A backlog is left to the next start once the service stops.
      if (events.length < dispatcher.batch || this.stopping) return;
    }
  }

  /** Carries a refused batch one event at a time, parking each event the receiver refuses on its own. */
  private async carryOneByOne(dispatcher: Dispatcher, events: OutboxEvent[]): Promise<void> {
    for (const event of events) {
      try {
        await dispatcher.send([event]);
        await this.markCarried(dispatcher, [event._id]);
      } catch (error) {
        if (!dispatcher.refuses?.(error)) throw error;
        const refusal = { dispatcher: dispatcher.name, error: (error as Error).message, dts: new Date() };
        await this.outbox.updateOne({ _id: event._id }, { $set: { [dispatcher.mark]: new Date(), refusal } });
        this.logger.error('event refused and parked', {
          dispatcher: dispatcher.name,
          eventId: event._id,
          type: event.type,
          error: refusal.error,
        });
      }
    }
  }

  /** Deletes the events carried everywhere they go more than a week ago. */
  private async prune(): Promise<void> {
    const cutoff = new Date(Date.now() - RETENTION_MS);
    await this.outbox.deleteMany({
      dtsPublished: { $lt: cutoff },
      refusal: { $exists: false },
      $or: [{ type: { $nin: FORWARDED_TYPES } }, { dtsForwarded: { $ne: null } }],
    });
  }
}
export type { OutboxEvent } from '../contracts/events.js';
