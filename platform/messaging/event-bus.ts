import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import type { Logger } from '../runtime/logger.js';

/** An event as the bus carries it: what the outbox stored, with its id. */
export interface BusEvent {
  id: string;
  type: string;
  /** Who may see it: the user or aggregator (and merchant) it concerns. */
  audience: { SvcUserId?: string; svcAggregatorId?: string; svcMerchantId?: string };
  payload: Record<string, unknown>;
  /** When the state change was stored (ISO 8601). */
  dtsCreated: string;
}

/**
 * An event as the log hands it out: with its position, which orders it within the log
 * (`<milliseconds>-<sequence>`, as Redis Streams writes entry ids; compare with `comparePositions`).
 */
export interface LoggedEvent extends BusEvent {
  position: string;
}

/** How long the log keeps events: those older than `seconds` go, and past `events` the oldest go. */
export interface EventRetention {
  seconds: number;
  events: number;
}

/** What the log keeps unless configured: an hour, and at most this many events. */
const DEFAULT_RETENTION: EventRetention = { seconds: 3600, events: 100_000 };

/**
 * How long the log remembers an event's id, so that a second copy is not appended: outbox engines
 * may carry one event twice (replicas sweeping side by side, a process that died before marking),
 * and such copies follow the first within a few sweeps. Never longer than the retention.
 */
const DUPLICATE_WINDOW_SECONDS = 600;

/** How long a log of this retention remembers ids. */
function duplicateWindowMs(retention: EventRetention): number {
  return Math.min(retention.seconds, DUPLICATE_WINDOW_SECONDS) * 1000;
}

/** Orders two positions of one log: negative, zero or positive as `a` comes before, at or after `b`. */
export function comparePositions(a: string, b: string): number {
  const [aMs = 0, aSeq = 0] = a.split('-').map(Number);
  const [bMs = 0, bSeq = 0] = b.split('-').map(Number);
  return aMs - bMs || aSeq - bSeq;
}

/** An ordered log of events that every process sharing it reads from its own position. */
export interface EventBus {
  /** Appends an event to the log; every subscriber of every process sharing it receives it. */
  publish(event: BusEvent): Promise<void>;
  /** Calls `listener` with every event appended from now on, in the log's order; returns the unsubscribe. */
  subscribe(listener: (event: LoggedEvent) => void): () => void;
  /**
   * A number that stays the same for as long as this bus has delivered every event appended
   * since it was taken; null while it may be behind (its connection is down). A reconnection
   * that finds every event it missed still in the log keeps the number: what was kept current
   * by events holds across it. Only events lost to the retention move it on.
   */
  continuity(): number | null;
  /**
   * Resolves once subscribers receive every event appended from then on; then `position()` is the
   * position of the last event handed to them (or of the log's newest when reading began): every
   * later one reaches them, and every earlier one is for `read`.
   */
  ready(): Promise<void>;
  /** See `ready`; null when nothing was ever appended to the log. */
  position(): string | null;
  /**
   * Up to `limit` events of the log after `after`, through `through`, oldest first; null when the
   * log no longer holds the event at `after` (the retention took it, or the log never held it),
   * so what followed it may be gone too.
   */
  read(after: string, through: string, limit: number): Promise<LoggedEvent[] | null>;
  close(): Promise<void>;
}

/** The bus of one process: the embedded default, where every service runs in one process. */
export class InProcessBus implements EventBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private readonly log: LoggedEvent[] = [];
  /** Ids appended within the duplicate window, with when. */
  private readonly recentIds = new Map<string, number>();
  private lastMs = 0;
  private sequence = 0;
  private closed = false;

  constructor(private readonly retention: EventRetention = DEFAULT_RETENTION) {}

  async publish(event: BusEvent): Promise<void> {
    const now = Date.now();
    for (const [id, at] of this.recentIds) {
      if (at > now - duplicateWindowMs(this.retention)) break;
      this.recentIds.delete(id);
    }
    if (this.recentIds.has(event.id)) return;
    this.recentIds.set(event.id, now);
    if (now > this.lastMs) {
      this.lastMs = now;
      this.sequence = 0;
    } else {
      this.sequence += 1;
    }
    const logged: LoggedEvent = { ...event, position: `${this.lastMs}-${this.sequence}` };
    this.log.push(logged);
    this.trim(now);
    this.emitter.emit('event', logged);
  }

  subscribe(listener: (event: LoggedEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  continuity(): number | null {
    return this.closed ? null : 0;
  }

  async ready(): Promise<void> {}

  position(): string | null {
    return this.log.at(-1)?.position ?? null;
  }

  async read(after: string, through: string, limit: number): Promise<LoggedEvent[] | null> {
    const held = this.held();
    const at = binarySearch(held, after);
    if (at < 0) return null;
    const events: LoggedEvent[] = [];
    for (let i = at + 1; i < held.length && events.length < limit && comparePositions(held[i]!.position, through) <= 0; i += 1)
      events.push(held[i]!);
    return events;
  }

  /** The events the log still holds, oldest first. */
  held(): readonly LoggedEvent[] {
    this.trim(Date.now());
    return this.log;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.emitter.removeAllListeners();
  }

  private trim(now: number): void {
    const oldest = now - this.retention.seconds * 1000;
    let drop = Math.max(0, this.log.length - this.retention.events);
    while (drop < this.log.length && Number(this.log[drop]!.position.split('-')[0]) < oldest) drop += 1;
    if (drop > 0) this.log.splice(0, drop);
  }
}

/** The index of the event at `position` in a log ordered by position, or -1. */
function binarySearch(log: readonly LoggedEvent[], position: string): number {
  let low = 0;
  let high = log.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const order = comparePositions(log[middle]!.position, position);
    if (order === 0) return middle;
    if (order < 0) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

/** The Redis stream every instance appends to and reads from. */
const EVENTS_STREAM = 'banking-graph:events';

/** Events read per call, and how long one read waits for the next. */
const READ_BATCH = 500;
const READ_BLOCK_MS = 2000;

/**
 * Appends one event with its ordinal (one more than the last appended, kept beside the stream),
 * then trims the stream by length and by age, in one step: a reader tells a gap from the ordinals.
 * Both keys expire once the retention passes without an event, so a deployment's log that is no
 * longer written (a stopped test stack) leaves nothing behind; ordinals that start again read as a gap.
 * An id appended within the duplicate window (its key, KEYS[3], still there) is not appended again.
 */
const APPEND = `
if not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[5]) then return 0 end
local n = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'n', n, 'event', ARGV[2])
redis.call('XTRIM', KEYS[1], 'MINID', '~', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return n`;

/** A field of a stream entry (`[name, value, name, value, …]`), or undefined. */
function fieldOf(fields: readonly string[], name: string): string | undefined {
  const at = fields.indexOf(name);
  return at >= 0 && at % 2 === 0 ? fields[at + 1] : undefined;
}

/**
 * Redis Streams, for services in several processes or on several machines: every event is
 * appended to one stream with its ordinal, trimmed by length and by age, and every instance reads
 * the stream from its own position (XREAD) and hands each event to its own subscribers. A reader
 * that loses its connection reads on from where it was once it is back, so a reconnection loses
 * nothing the retention still holds; an ordinal that skips says what the retention took. The
 * reader's connection is opened on the first local subscription; appending has its own (a read
 * blocks its connection).
 */
export class RedisBus implements EventBus {
  private readonly publisher: Redis;
  private reader: Redis | null = null;
  private reading: Promise<void> | null = null;
  private readonly local = new EventEmitter().setMaxListeners(0);
  /** Counts the gaps the reader found; `live` while it is caught up and connected. */
  private epoch = 0;
  private live = false;
  /** Set when the connection drops: the next read does not wait, and the reader is live once it has caught up. */
  private catchingUp = false;
  /** The ordinal and the position of the last event read. */
  private ordinal = 0;
  private last: string | null = null;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly stream = EVENTS_STREAM,
    private readonly retention: EventRetention = DEFAULT_RETENTION,
  ) {
    this.publisher = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3 });
    this.publisher.on('error', (error: Error) => logger.warn('redis publisher error', { error: error.message }));
    // Sent by its hash (EVALSHA), the script's text only when Redis does not hold it yet.
    this.publisher.defineCommand('appendEvent', { numberOfKeys: 3, lua: APPEND });
  }

  async publish(event: BusEvent): Promise<void> {
    const oldest = Date.now() - this.retention.seconds * 1000;
    const publisher = this.publisher as Redis & { appendEvent(...args: string[]): Promise<number> };
    await publisher.appendEvent(
      this.stream,
      `${this.stream}:ordinal`,
      `${this.stream}:id:${event.id}`,
      String(this.retention.events),
      JSON.stringify(event),
      `${oldest}-0`,
      String(this.retention.seconds * 1000),
      String(duplicateWindowMs(this.retention)),
    );
  }

  /** Resolves once this instance reads the stream (events appended before are not handed out). */
  listening(): Promise<void> {
    if (!this.reading) {
      // A read cut by a dropped connection is sent again once it is back, from the same position.
      const reader = new Redis(this.url, { lazyConnect: false, connectionName: `${this.stream}:reader`, maxRetriesPerRequest: null });
      this.reader = reader;
      reader.on('error', (error: Error) => this.logger.warn('redis reader error', { error: error.message }));
      reader.on('close', () => {
        this.live = false;
        this.catchingUp = true;
      });
      this.reading = this.start(reader);
    }
    return this.reading;
  }

  subscribe(listener: (event: LoggedEvent) => void): () => void {
    void this.listening();
    this.local.on('event', listener);
    return () => this.local.off('event', listener);
  }

  continuity(): number | null {
    return this.live ? this.epoch : null;
  }

  ready(): Promise<void> {
    return this.listening();
  }

  position(): string | null {
    return this.last;
  }

  async read(after: string, through: string, limit: number): Promise<LoggedEvent[] | null> {
    // From `after` itself: the entry must still be there, else what followed it may be trimmed too.
    const entries = (await this.publisher.xrange(this.stream, after, through, 'COUNT', limit + 1)) as Array<[string, string[]]>;
    if (entries[0]?.[0] !== after) return null;
    const events: LoggedEvent[] = [];
    for (const [position, fields] of entries.slice(1)) {
      const event = this.parse(position, fields);
      if (event) events.push(event);
    }
    return events;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.live = false;
    this.epoch += 1;
    this.local.removeAllListeners();
    // A read blocks its connection: the reader is dropped rather than asked to quit after it.
    this.reader?.disconnect();
    await this.publisher.quit().catch(() => {});
  }

  /** Takes the stream's newest event (or, in an empty stream, the last ordinal given) as the start, then reads on. */
  private async start(reader: Redis): Promise<void> {
    const answers = await reader.multi().get(`${this.stream}:ordinal`).xrevrange(this.stream, '+', '-', 'COUNT', 1).exec();
    const given = answers?.[0]?.[1];
    const [newest] = (answers?.[1]?.[1] ?? []) as Array<[string, string[]]>;
    this.ordinal = newest ? Number(fieldOf(newest[1], 'n') ?? 0) : Number(given ?? 0);
    this.last = newest?.[0] ?? null;
    this.live = true;
    void this.readOn(reader, newest?.[0] ?? '0-0');
  }

  private async readOn(reader: Redis, from: string): Promise<void> {
    let last = from;
    while (this.isOpen()) {
      try {
        if (this.catchingUp) {
          last = await this.catchUp(reader, last);
          continue;
        }
        const answer = await reader.xread('COUNT', READ_BATCH, 'BLOCK', READ_BLOCK_MS, 'STREAMS', this.stream, last);
        for (const [, entries] of answer ?? []) {
          for (const [position, fields] of entries) {
            last = position;
            this.deliver(position, fields);
          }
        }
      } catch (error) {
        if (!this.isOpen()) return;
        this.logger.warn('redis read failed; reading on from the last position', {
          error: error instanceof Error ? error.message : String(error),
        });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  /**
   * After a reconnection: reads what was appended meanwhile without waiting, with the last ordinal
   * given in the same step, until it has it all; then it is live again, under the same number
   * unless the retention took events it had not read. Returns the position it reached.
   */
  private async catchUp(reader: Redis, from: string): Promise<string> {
    let last = from;
    const answers = await reader.multi().xread('COUNT', READ_BATCH, 'STREAMS', this.stream, last).get(`${this.stream}:ordinal`).exec();
    const failed = answers?.find(([error]) => error !== null)?.[0];
    if (failed) throw failed;
    const read = (answers?.[0]?.[1] ?? null) as Array<[string, Array<[string, string[]]>]> | null;
    let count = 0;
    for (const [, entries] of read ?? []) {
      for (const [position, fields] of entries) {
        last = position;
        count += 1;
        this.deliver(position, fields);
      }
    }
    if (count < READ_BATCH) {
      const given = Number(answers?.[1]?.[1] ?? 0);
      if (given > this.ordinal) {
        this.logger.warn('events trimmed from the log before this reader read them', { after: this.ordinal, given });
        this.epoch += 1;
        this.ordinal = given;
      }
      this.catchingUp = false;
      this.live = true;
    }
    return last;
  }

  /** Whether the bus is still open: read afresh, since it closes while reads are awaited. */
  private isOpen(): boolean {
    return !this.closed;
  }

  private deliver(position: string, fields: string[]): void {
    const ordinal = Number(fieldOf(fields, 'n'));
    if (ordinal !== this.ordinal + 1) {
      // Events between the two were trimmed before this reader read them: what they kept current may be stale.
      this.logger.warn('events trimmed from the log before this reader read them', { after: this.ordinal, next: ordinal });
      this.epoch += 1;
    }
    this.ordinal = ordinal;
    this.last = position;
    const event = this.parse(position, fields);
    if (event) this.local.emit('event', event);
  }

  private parse(position: string, fields: string[]): LoggedEvent | null {
    try {
      return { ...(JSON.parse(fieldOf(fields, 'event') ?? '') as BusEvent), position };
    } catch (error) {
      this.logger.warn('unreadable event in the log', { position, error: error instanceof Error ? error.message : String(error) });
      return null;
    }
  }
}

/**
 * The bus configuration asks for: Redis where `redisUrl` is set, otherwise in-process. The Redis
 * stream is named after the deployment's database prefix, so deployments sharing a Redis (or
 * test stacks sharing one) never see each other's events.
 */
export function createEventBus(redisUrl: string | undefined, logger: Logger, namespace = '', retention = DEFAULT_RETENTION): EventBus {
  return redisUrl ? new RedisBus(redisUrl, logger, `${EVENTS_STREAM}:${namespace}`, retention) : new InProcessBus(retention);
}
