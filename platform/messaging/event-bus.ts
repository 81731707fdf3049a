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

/** Publishes events to every subscriber of every process that shares the bus. */
export interface EventBus {
  publish(event: BusEvent): Promise<void>;
  /** Calls `listener` with every event published from now on; returns the unsubscribe. */
  subscribe(listener: (event: BusEvent) => void): () => void;
  /**
   * A number that stays the same for as long as this bus has delivered every event published
   * since it was taken; null while it may be missing events (its connection is down). What is
   * kept current by events holds only under the number it was read under.
   */
  continuity(): number | null;
  close(): Promise<void>;
}

/** The bus of one process: the embedded default, where every service runs in one process. */
export class InProcessBus implements EventBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  private closed = false;

  async publish(event: BusEvent): Promise<void> {
    this.emitter.emit('event', event);
  }

  subscribe(listener: (event: BusEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  continuity(): number | null {
    return this.closed ? null : 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.emitter.removeAllListeners();
  }
}

/** The Redis channel every instance publishes to and listens on. */
const EVENTS_CHANNEL = 'banking-graph:events';

/**
 * Redis pub/sub, for services in several processes or on several machines: every gateway
 * instance receives every event and hands it to its own subscribers. A subscriber connection is
 * opened on the first local subscription; the publishing connection is separate (Redis requires it).
 */
export class RedisBus implements EventBus {
  private readonly publisher: Redis;
  private subscriber: Redis | null = null;
  private ready: Promise<unknown> | null = null;
  private readonly local = new InProcessBus();
  /** Counts the subscriber's disconnections; `live` while it listens on the channel. */
  private epoch = 0;
  private live = false;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly channel = EVENTS_CHANNEL,
  ) {
    this.publisher = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3 });
    this.publisher.on('error', (error: Error) => logger.warn('redis publisher error', { error: error.message }));
  }

  async publish(event: BusEvent): Promise<void> {
    await this.publisher.publish(this.channel, JSON.stringify(event));
  }

  /** Resolves once this instance listens on the channel (events published before are not seen). */
  listening(): Promise<unknown> {
    if (!this.ready) {
      this.subscriber = new Redis(this.url, { lazyConnect: false, connectionName: `${this.channel}:subscriber` });
      this.subscriber.on('error', (error: Error) => this.logger.warn('redis subscriber error', { error: error.message }));
      // Events published while the subscriber is away are lost to it: the epoch moves on, and it is live again once subscribed anew.
      this.subscriber.on('close', () => {
        this.live = false;
        this.epoch += 1;
      });
      this.subscriber.on('ready', () => {
        const epoch = this.epoch;
        this.subscriber?.subscribe(this.channel).then(
          () => {
            if (this.epoch === epoch) this.live = true;
          },
          () => {},
        );
      });
      this.subscriber.on('message', (_channel: string, message: string) => {
        try {
          void this.local.publish(JSON.parse(message) as BusEvent);
        } catch (error) {
          this.logger.warn('unreadable event on the bus', { error: (error as Error).message });
        }
      });
      this.ready = this.subscriber.subscribe(this.channel);
    }
    return this.ready;
  }

  subscribe(listener: (event: BusEvent) => void): () => void {
    void this.listening();
    return this.local.subscribe(listener);
  }

  continuity(): number | null {
    return this.live ? this.epoch : null;
  }

  async close(): Promise<void> {
    this.live = false;
    this.epoch += 1;
    await this.local.close();
    await Promise.allSettled([this.publisher.quit(), this.subscriber?.quit()]);
  }
}

/**
 * The bus configuration asks for: Redis where `redisUrl` is set, otherwise in-process. The Redis
 * channel is named after the deployment's database prefix, so deployments sharing a Redis (or
 * test stacks sharing one) never see each other's events.
 */
export function createEventBus(redisUrl: string | undefined, logger: Logger, namespace = ''): EventBus {
  return redisUrl ? new RedisBus(redisUrl, logger, `${EVENTS_CHANNEL}:${namespace}`) : new InProcessBus();
}
