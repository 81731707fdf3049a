import { GraphQLError, type DocumentNode, type ExecutionResult, type FormattedExecutionResult } from 'graphql';
import { appError, ErrorCode } from '../../../platform/contracts/errors.js';
import { endsSession, SESSIONS_ENDED } from '../../../platform/contracts/events.js';
import { ownValue } from '../../../platform/contracts/own.js';
import { principalIdentity, type Principal } from '../../../platform/contracts/principal.js';
import { comparePositions, type EventBus, type LoggedEvent } from '../../../platform/messaging/event-bus.js';
import type { Logger } from '../../../platform/runtime/logger.js';
import {
  eventBusLag,
  replayedEvents,
  subscriptionCatchUp,
  subscriptionRefusals,
  subscriptionResumes,
  type SUBSCRIPTION_LIMITS,
} from '../../../platform/telemetry/metrics.js';
import { sessionTokenKey } from '../authenticate.js';
import { refuseDocument, type DocumentLimits } from '../document-limits.js';
import type { HitCounter } from '../rate-limits.js';
import { KEY_VARIABLE, mayReceive, prepareSubscription, triggers, type CatalogueEvent, type PreparedSubscription } from './routes.js';

/** Runs an operation through the gateway's own execution for a principal. */
export type ExecuteAs = (
  document: DocumentNode | string,
  variables: Record<string, unknown>,
  principal: Principal,
) => Promise<FormattedExecutionResult>;

/**
 * The bounds of one gateway's subscriptions, whatever their transport: open connections per
 * principal (who it is, however its credential is spelled) and per client address (an IPv6
 * address by its /64), subscriptions per principal across its connections, and subscribe messages
 * per window per connection and per principal.
 */
export interface SubscriptionLimits {
  connectionsPerPrincipal: number;
  connectionsPerAddress: number;
  subscriptionsPerPrincipal: number;
  subscribesPerConnection: number;
  subscribesPerPrincipal: number;
  windowSeconds: number;
}

/** What the engine needs from the gateway. */
export interface SubscriptionEngineOptions {
  bus: EventBus;
  /** The principal of a connection's credentials, read as HTTP headers; throws when refused. */
  authenticate: (headers: Record<string, string | undefined>) => Promise<Principal>;
  execute: ExecuteAs;
  logger: Logger;
  /** Bounds of a subscribe message's document, checked before it is parsed. */
  documentLimits: DocumentLimits;
  limits: SubscriptionLimits;
  /** Counts subscribe messages per principal (shared by every gateway where it is Redis). */
  counter: HitCounter;
  /** Whether a subscription's text may run (trusted documents); every one may when not given. */
  isTrusted?: (query: string) => boolean;
}

/** Why the engine ends a connection: its session ended, or the gateway is restarting. */
export type ConnectionEnd = 'session-ended' | 'restarting';

/**
 * Where one subscription's results go: a transport's writer. Results come serialized once for
 * every alike subscriber (`{"data":…,"extensions":{"position":…}}`).
 */
export interface EventSink {
  /** Whether the client is sent a result without data once a resumption has caught up (its client shows it as such). */
  readonly marksCaughtUp: boolean;
  /**
   * Writes one result. A transport whose client does not read fast enough ends its connection
   * instead (the client resumes from the last position it received): skipping would leave a gap.
   */
  send(result: Buffer, position: string): void;
  /**
   * Resolves once the client has read enough of what was sent to take more (what a resumption
   * waits for between the events it sends); false when the connection ended or never drained.
   */
  room(): Promise<boolean>;
  /** Ends the subscription with these errors as its last result. */
  fail(errors: readonly GraphQLError[]): void;
  /** Ends the connection so that the client resumes: it fell behind. */
  behind(): void;
}

/** A connection of any transport once authenticated: who it is, what it holds, its subscribe messages in the window. */
export interface Subscriber {
  readonly principal: Principal;
  readonly transport: Transport;
  /** Who the principal is, for the caps (`principalIdentity`). */
  readonly identity: string;
  readonly headers: Record<string, string>;
  /** The hash of its session token, when it came with one (`sessionTokenKey`). */
  readonly tokenKey: string | null;
  /** Subscriptions held, those admitted and not yet started (in `reserved`) included. */
  subscriptions: number;
  /** Subscribe messages admitted that have not become a subscription or been refused yet. */
  readonly reserved: Set<string>;
  window: { count: number; resetAt: number };
  readonly timer: NodeJS.Timeout;
  /** Closes the transport's connection. */
  readonly end: (why: ConnectionEnd, message: string) => void;
}

/** A refused connection: its credentials, or a cap (with the reason to send). */
type ConnectRefusal = { refused: 'credentials' } | { refused: (typeof SUBSCRIPTION_LIMITS)[number]; message: string };

/** A started subscription: ended by its transport when the client completes it or goes away. */
export interface ActiveSubscription {
  end(): void;
}

/** A subscribe request as a transport read it, once the document is parsed and validated. */
interface SubscribeRequest {
  document: DocumentNode;
  operationName: string | null | undefined;
  variables: Record<string, unknown>;
  /** The position to resume after when the document's `after` argument does not say (`extensions.after`). */
  after: string | null;
  /** SSE's `Last-Event-ID`, which goes before the others. */
  lastEventId: string | null;
}

/** The engine of every transport: admission, the bus listener, groups of alike subscribers, resumption. */
export interface SubscriptionEngine {
  /** Counts a connection open from an address group; returns its release. */
  openFrom(address: string): () => void;
  /** Why a connection from an address group is refused (more open than its cap), or null. */
  addressRefusal(address: string): string | null;
  /** Authenticates a connection and counts it against its principal's cap. */
  connect(
    headers: Record<string, string>,
    end: Subscriber['end'],
    stillOpen: () => boolean,
    transport: Transport,
  ): Promise<Subscriber | ConnectRefusal>;
  disconnect(subscriber: Subscriber): void;
  /** The checks of a subscribe message before it is parsed; reserves its place (by `id`) when it passes. */
  admit(subscriber: Subscriber, id: string, query: string): Promise<GraphQLError[] | undefined>;
  /** Gives back the place of a subscribe message that was refused or completed before it started. */
  release(subscriber: Subscriber, id: string): void;
  /** Starts an admitted subscription: resumed first when it asks, then live. */
  start(subscriber: Subscriber, id: string, request: SubscribeRequest, sink: EventSink): Promise<ActiveSubscription | GraphQLError[]>;
  /** Ends the connections opened with the session token of these headers: its logout ran on this gateway. */
  sessionEnded(headers: Record<string, string | undefined>): void;
  /** Subscriptions receiving events now, by transport. */
  subscribers(): Record<Transport, number>;
  /** Stops listening to the bus and ends every connection (`restarting`). */
  close(): void;
}

/** The transports the gateway serves subscriptions on. */
export type Transport = 'graphql-ws' | 'sse' | 'multipart';

/** Who may subscribe: end users, aggregators and merchants (a service key is for one job, not every event). */
const SUBSCRIBERS: ReadonlySet<Principal['kind']> = new Set(['user', 'aggregator', 'merchant']);
/** Subscriptions one connection may hold at once. */
const MAX_SUBSCRIPTIONS_PER_CONNECTION = 25;
/** How often a connection's credentials are checked again (a logout, a revoked token, an expired JWT). */
const RECHECK_MS = 60_000;
/** Event resolutions a group, or a resuming subscriber, may have waiting before it is too far behind. */
const MAX_PENDING = 1000;
/** Session-ended announcements kept, so that a connection authenticated while one arrived is checked against it. */
const RECENT_ANNOUNCEMENTS = 256;
/** Events read from the log per page of a resumption, and resolved ahead of the one being sent. */
const REPLAY_PAGE = 200;
const REPLAY_AHEAD = 16;
/** Replayed resolutions a group keeps, so that its members resuming together resolve each event once. */
const REPLAY_CACHE = 2000;
/** Entries of the log one resumption reads at most: a position further back is answered as expired. */
const MAX_REPLAY_SCAN = 20_000;
/** How long a resumption's read of an object serves the other missed events about it. */
const OBJECT_REUSE_MS = 1000;

/** The refusal of a position the log no longer holds. */
const eventsExpired = (why = 'The event log no longer holds this position: events after it may be gone.'): GraphQLError =>
  appError(ErrorCode.EVENTS_EXPIRED, `${why} Reload the state, then subscribe without \`after\`.`);

/** A position of the event log, as a client sends it back. */
const POSITION = /^\d{1,15}-\d{1,15}$/;

/** A count by key that forgets keys at zero. */
class Tally {
  private readonly counts = new Map<string, number>();
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  add(key: string, delta: number): void {
    const count = this.get(key) + delta;
    if (count > 0) this.counts.set(key, count);
    else this.counts.delete(key);
  }
}

/** Who a principal is, for telling whether a connection's credentials still name the same one (and with the same rights). */
function principalKey(principal: Principal): string {
  const identity = principalIdentity(principal) ?? principal.kind;
  return principal.kind === 'aggregator' ? `${identity}:${principal.tokenType}` : identity;
}

/** A result with the event's position (and more) in its extensions, serialized. */
function serialize(result: ExecutionResult, extensions: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify({ ...result, extensions: { ...result.extensions, ...extensions } }));
}

/**
 * One subscription in its group. While it resumes, live results wait behind the replayed ones;
 * results at or before the position it resumed after are not sent again (a gateway's reader may be
 * behind the one that served the client before).
 */
class Member {
  ended = false;
  private waiting: Array<{ result: Buffer; position: string }> | null = null;

  constructor(
    readonly sink: EventSink,
    readonly transport: Transport,
    private readonly after: string | null,
  ) {}

  deliver(result: Buffer, position: string): void {
    if (this.ended || (this.after !== null && comparePositions(position, this.after) <= 0)) return;
    if (this.waiting === null) this.sink.send(result, position);
    else if (this.waiting.length < MAX_PENDING) this.waiting.push({ result, position });
    else this.sink.behind();
  }

  /** Whether the subscription ended (read afresh: it ends while a resumption waits). */
  gone(): boolean {
    return this.ended;
  }

  /** Live results wait from now until `live`. */
  hold(): void {
    this.waiting = [];
  }

  live(): void {
    const waiting = this.waiting ?? [];
    this.waiting = null;
    for (const { result, position } of waiting) if (!this.ended) this.sink.send(result, position);
  }
}

/**
 * Subscribers that are exactly alike (principal, query text, variables): each event is resolved
 * once for all of them, and the resolutions are delivered in the order the events arrived (several
 * run at once, so a slow one does not hold back the ones behind it); a null resolution (the group
 * may not see the object after all) is skipped.
 */
class SubscriberGroup {
  /** Each member, with the sequence number of the first event it receives (none that arrived before it joined). */
  readonly members = new Map<Member, number>();
  private readonly pending: Array<{ sequence: number; position: string; resolution: Promise<ExecutionResult | null> }> = [];
  private readonly replays = new Map<string, { at: number; result: Promise<Buffer | null> }>();
  /** The latest read of each object for resumptions, by its key: when it was made, and the log's position then. */
  private readonly objects = new Map<string, { at: number; position: string | null; resolution: Promise<ExecutionResult | null> }>();
  private nextSequence = 0;
  private draining = false;

  constructor(
    readonly principal: Principal,
    readonly prepared: PreparedSubscription,
    private readonly resolve: (group: SubscriberGroup, event: CatalogueEvent) => Promise<ExecutionResult | null>,
    private readonly logger: Logger,
    /** The log's position as this gateway has read it (the last event its listener handed out). */
    private readonly logPosition: () => string | null,
  ) {}

  join(member: Member): void {
    this.members.set(member, this.nextSequence);
  }

  /** Queues a live event's resolution. */
  push(event: CatalogueEvent & LoggedEvent): void {
    if (this.pending.length >= MAX_PENDING) {
      // The group's subscribers are too far behind for what is waiting: they resume instead.
      for (const member of this.members.keys()) member.sink.behind();
      return;
    }
    this.pending.push({ sequence: this.nextSequence++, position: event.position, resolution: this.resolve(this, event) });
    void this.drain();
  }

  /**
   * A missed event's result for a resuming member, resolved once for members resuming together.
   * An object read after an event was appended serves that event too, for a moment: the event
   * would be read as the object is now, and reading it again gives the same answer.
   */
  replayed(event: CatalogueEvent & LoggedEvent): Promise<Buffer | null> {
    const now = performance.now();
    const cached = this.replays.get(event.id);
    if (cached && now - cached.at <= OBJECT_REUSE_MS) return cached.result;
    const key = JSON.stringify(this.prepared.route.key(event.payload));
    let object = this.objects.get(key);
    // Read after the event was appended (the log had reached it), and a moment ago at most.
    if (!object || object.position === null || comparePositions(object.position, event.position) < 0 || now - object.at > OBJECT_REUSE_MS) {
      object = { at: now, position: this.logPosition(), resolution: this.resolve(this, event) };
      this.objects.set(key, object);
      if (this.objects.size > REPLAY_CACHE) this.objects.delete(this.objects.keys().next().value!);
    }
    const result = object.resolution.then((resolved) =>
      resolved ? serialize(resolved, { position: event.position, replayed: true }) : null,
    );
    this.replays.delete(event.id);
    this.replays.set(event.id, { at: now, result });
    if (this.replays.size > REPLAY_CACHE) this.replays.delete(this.replays.keys().next().value!);
    return result;
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.pending.length > 0) {
        const { sequence, position, resolution } = this.pending.shift()!;
        const result = await resolution;
        if (!result || this.members.size === 0) continue;
        try {
          const payload = serialize(result, { position });
          for (const [member, joinedAt] of this.members) if (sequence >= joinedAt) member.deliver(payload, position);
        } catch (error) {
          this.logger.warn('subscription event not sent', { error: (error as Error).message });
        }
      }
    } finally {
      this.draining = false;
    }
  }
}

/**
 * The subscription engine behind every transport. One bus listener per gateway fans events out to
 * groups of alike subscribers; each event is resolved with the group's selection through the
 * gateway's query execution, once per event and group, serialized once, and handed to each
 * member's transport with its position in the event log.
 *
 * A subscription that resumes after a position first gets, in order, each event of the log after
 * it that it may see (resolved as the subscriber, as a live one is), up to the last event this
 * gateway's listener has handed out, then a result that says it caught up, then the live events
 * that arrived meanwhile and after: no gap and no repeat. The log no longer holding the position
 * ends it with EVENTS_EXPIRED.
 *
 * Bounded per gateway across transports: connections per principal and per client address,
 * subscriptions per connection and per principal, and subscribe messages per window per
 * connection and per principal; each document's size and tokens are checked before it is parsed.
 * A session ended (the `sessions.ended` announcement on the bus, or a logout served by this
 * gateway) ends its connections at once; every connection's credentials are also checked again on
 * each subscribe and every minute, the bound when the bus carried nothing.
 */
export function createSubscriptionEngine(options: SubscriptionEngineOptions): SubscriptionEngine {
  const { logger, limits, bus } = options;
  const windowMs = limits.windowSeconds * 1000;
  const connections = new Set<Subscriber>();
  const connectionsOf = new Tally();
  const subscriptionsOf = new Tally();
  const openAt = new Tally();
  const announced: Array<Record<string, unknown>> = [];
  let announcements = 0;
  /** By the whole principal, query text and variables: only subscribers that are exactly alike share a resolution. */
  const groups = new Map<string, SubscriberGroup>();
  const seen = new Set<string>();

  const refusal = (limit: (typeof SUBSCRIPTION_LIMITS)[number], message: string, retryAfterSeconds?: number): GraphQLError[] => {
    subscriptionRefusals.inc({ limit });
    return [
      retryAfterSeconds === undefined
        ? appError(ErrorCode.OPERATION_LIMIT_EXCEEDED, message)
        : appError(ErrorCode.RATE_LIMITED, message, { retryAfterSeconds }),
    ];
  };
  const credentialsGone = (): GraphQLError[] => [appError(ErrorCode.UNAUTHENTICATED, 'The connection credentials are no longer valid.')];
  /** A subscribe message the client completed (or sent again) while it was being started: it does not start. */
  const completedBeforeStart = (): GraphQLError[] => [
    appError(ErrorCode.BAD_REQUEST, 'This subscription was completed before it started.'),
  ];

  const release = (subscriber: Subscriber, id?: string): void => {
    if (id !== undefined && !subscriber.reserved.delete(id)) return;
    subscriber.subscriptions -= 1;
    subscriptionsOf.add(subscriber.identity, -1);
  };
  /**
   * A subscribe message with the id of one still being started: the client completed that one (an
   * id in use closes the socket first), so it gives its place back and will not start; this one is
   * refused, uncounted, and the id is free again.
   */
  const idInUse = (subscriber: Subscriber, id: string): GraphQLError[] => {
    release(subscriber, id);
    return [appError(ErrorCode.BAD_REQUEST, `A subscription with the id ${JSON.stringify(id)} is being started already.`)];
  };
  const disconnect = (subscriber: Subscriber): void => {
    if (!connections.delete(subscriber)) return;
    clearInterval(subscriber.timer);
    connectionsOf.add(subscriber.identity, -1);
    for (const id of subscriber.reserved) release(subscriber, id);
  };
  const endConnection = (subscriber: Subscriber, why: ConnectionEnd, message: string): void => {
    disconnect(subscriber);
    subscriber.end(why, message);
  };
  /** Whether an announcement since the `since`-th ended the principal's session (it may have overtaken the read that found it live). */
  const endedSince = (since: number, principal: Principal): boolean =>
    announcements - since > announced.length ||
    announced.slice(announced.length - (announcements - since)).some((ended) => endsSession(ended, principal));
  /** Checks a connection's credentials again; ends it when they no longer hold. */
  const recheck = async (subscriber: Subscriber): Promise<boolean> => {
    if (!connections.has(subscriber)) return false;
    const since = announcements;
    try {
      const principal = await options.authenticate(subscriber.headers);
      if (principalKey(principal) === principalKey(subscriber.principal) && !endedSince(since, principal)) return true;
    } catch {
      // Refused: ended below.
    }
    endConnection(subscriber, 'session-ended', 'The credentials of this connection are no longer valid.');
    return false;
  };

  /** Resolves one event for a group; null when the group may not see the object after all (its own resolver decided). */
  const resolveFor = async (group: SubscriberGroup, event: CatalogueEvent): Promise<ExecutionResult | null> => {
    const { prepared } = group;
    try {
      // The query's text, not its document: Apollo caches parsing, validation and the query plan by text.
      const result = await options.execute(
        prepared.text,
        { ...prepared.variables, [KEY_VARIABLE]: prepared.route.key(event.payload) },
        group.principal,
      );
      // The response key is the client's alias: its own property only (`toString` must not find Object.prototype's).
      const value = result.data ? ownValue(result.data, prepared.responseKey) : undefined;
      // Formatted errors travel to the client as they are.
      return value === null || value === undefined ? null : (result as ExecutionResult);
    } catch (error) {
      logger.warn('subscription event not resolved', { eventId: event.id, error: (error as Error).message });
      return null;
    }
  };
  /** Whether a logged event is one a group's subscribers may receive (their objects' resolvers then decide what they see). */
  const concerns = (group: SubscriberGroup, event: LoggedEvent): event is CatalogueEvent & LoggedEvent =>
    triggers(group.prepared.route, event) && mayReceive(group.principal, event);

  const unsubscribe = bus.subscribe((event) => {
    if (seen.has(event.id)) return;
    seen.add(event.id);
    if (seen.size > 10_000) seen.delete(seen.values().next().value!);
    const storedAt = Date.parse(event.dtsCreated);
    if (Number.isFinite(storedAt)) eventBusLag.observe(Math.max(0, Date.now() - storedAt) / 1000);
    if (event.type === SESSIONS_ENDED) {
      announcements += 1;
      announced.push(event.payload);
      if (announced.length > RECENT_ANNOUNCEMENTS) announced.shift();
      for (const subscriber of connections)
        if (endsSession(event.payload, subscriber.principal)) endConnection(subscriber, 'session-ended', 'The session has ended.');
      return;
    }
    for (const group of groups.values()) if (concerns(group, event)) group.push(event);
  });

  /**
   * Sends a resuming member what it missed after `after`, through `through` (the last event the
   * listener handed out when it joined), then says it caught up and lets the live results go.
   */
  const resume = async (member: Member, group: SubscriberGroup, after: string, through: string | null): Promise<void> => {
    const started = performance.now();
    const until = through !== null && comparePositions(through, after) > 0 ? through : after;
    let from = after;
    let replayed = 0;
    let scanned = 0;
    try {
      for (;;) {
        const events = await bus.read(from, until, REPLAY_PAGE);
        if (member.gone()) {
          subscriptionResumes.inc({ outcome: 'cut' });
          return;
        }
        if (events === null) {
          subscriptionResumes.inc({ outcome: 'expired' });
          member.sink.fail([eventsExpired()]);
          return;
        }
        const missed = events.filter((event) => concerns(group, event));
        const results: Array<Promise<Buffer | null>> = [];
        for (let i = 0; i < missed.length; i += 1) {
          while (results.length < Math.min(missed.length, i + REPLAY_AHEAD)) results.push(group.replayed(missed[results.length]!));
          const result = await results[i]!;
          if (member.gone() || !(await member.sink.room())) {
            subscriptionResumes.inc({ outcome: 'cut' });
            return;
          }
          if (result) {
            member.sink.send(result, missed[i]!.position);
            replayed += 1;
          }
        }
        // A page shorter than asked may only mean unreadable entries were left out: the end is an empty page.
        if (events.length === 0) break;
        scanned += events.length;
        if (scanned > MAX_REPLAY_SCAN) {
          subscriptionResumes.inc({ outcome: 'expired' });
          member.sink.fail([eventsExpired(`This position is further back than a gateway replays (${MAX_REPLAY_SCAN} events of the log).`)]);
          return;
        }
        from = events.at(-1)!.position;
      }
    } catch (error) {
      // The log is away: the client resumes again from what it has.
      logger.warn('subscription not resumed', { error: (error as Error).message });
      subscriptionResumes.inc({ outcome: 'cut' });
      member.sink.behind();
      return;
    }
    replayedEvents.inc(replayed);
    subscriptionResumes.inc({ outcome: 'caught_up' });
    subscriptionCatchUp.observe((performance.now() - started) / 1000);
    if (member.sink.marksCaughtUp)
      member.sink.send(Buffer.from(JSON.stringify({ extensions: { position: until, caughtUp: { replayed } } })), until);
    member.live();
  };

  return {
    openFrom: (address) => {
      openAt.add(address, 1);
      let open = true;
      return () => {
        if (open) openAt.add(address, -1);
        open = false;
      };
    },
    addressRefusal: (address) => {
      if (openAt.get(address) <= limits.connectionsPerAddress) return null;
      subscriptionRefusals.inc({ limit: 'connections-per-address' });
      return `Too many connections from this address: at most ${limits.connectionsPerAddress}.`;
    },
    connect: async (headers, end, stillOpen, transport) => {
      const since = announcements;
      let principal: Principal;
      try {
        principal = await options.authenticate(headers);
      } catch {
        return { refused: 'credentials' };
      }
      if (!SUBSCRIBERS.has(principal.kind) || endedSince(since, principal) || !stillOpen()) return { refused: 'credentials' };
      const identity = principalIdentity(principal) ?? principal.kind;
      if (connectionsOf.get(identity) >= limits.connectionsPerPrincipal) {
        subscriptionRefusals.inc({ limit: 'connections-per-principal' });
        return {
          refused: 'connections-per-principal',
          message: `Too many connections for these credentials: at most ${limits.connectionsPerPrincipal}.`,
        };
      }
      const subscriber: Subscriber = {
        principal,
        transport,
        identity,
        headers,
        tokenKey: sessionTokenKey(headers),
        subscriptions: 0,
        reserved: new Set(),
        window: { count: 0, resetAt: 0 },
        timer: setInterval(() => void recheck(subscriber), RECHECK_MS).unref(),
        end,
      };
      connectionsOf.add(identity, 1);
      connections.add(subscriber);
      return subscriber;
    },
    disconnect,
    admit: async (subscriber, id, query) => {
      if (!connections.has(subscriber)) return credentialsGone();
      // An id completed and sent again while its first subscribe is still being admitted: one place per id.
      if (subscriber.reserved.has(id)) return idInUse(subscriber, id);
      const now = Date.now();
      if (subscriber.window.resetAt <= now) subscriber.window = { count: 0, resetAt: now + windowMs };
      subscriber.window.count += 1;
      if (subscriber.window.count > limits.subscribesPerConnection) {
        const retryAfterSeconds = Math.max(1, Math.ceil((subscriber.window.resetAt - now) / 1000));
        return refusal(
          'subscribe-rate-per-connection',
          `Too many subscribe messages on this connection: at most ${limits.subscribesPerConnection} in ${limits.windowSeconds} s; try again in ${retryAfterSeconds} s.`,
          retryAfterSeconds,
        );
      }
      // Hashed for the trusted documents only once the message has been counted.
      if (options.isTrusted && !options.isTrusted(query)) {
        return [
          new GraphQLError('This deployment runs registered operations only (trusted documents), and this operation is not one of them.', {
            extensions: { code: ErrorCode.OPERATION_NOT_TRUSTED },
          }),
        ];
      }
      const oversized = refuseDocument(query, options.documentLimits, 'subscription');
      if (oversized) return [oversized];
      try {
        const { count, resetMs } = await options.counter.hit(`ws:${subscriber.identity}`, windowMs);
        if (count > limits.subscribesPerPrincipal) {
          const retryAfterSeconds = Math.max(1, Math.ceil(resetMs / 1000));
          return refusal(
            'subscribe-rate-per-principal',
            `Too many subscribe messages for these credentials: at most ${limits.subscribesPerPrincipal} in ${limits.windowSeconds} s; try again in ${retryAfterSeconds} s.`,
            retryAfterSeconds,
          );
        }
      } catch (error) {
        // The store is down: serve rather than refuse everyone; the connection's own rate still holds.
        logger.warn('subscribe rate not counted', { error: (error as Error).message });
      }
      // Each operation checks the credentials again, so a logout or revocation takes effect at once.
      if (!(await recheck(subscriber))) return credentialsGone();
      // Checked and reserved in one step after the last wait: messages handled side by side cannot all pass the caps.
      if (subscriber.subscriptions >= MAX_SUBSCRIPTIONS_PER_CONNECTION)
        return refusal('subscriptions-per-connection', `At most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions per connection.`);
      if (subscriptionsOf.get(subscriber.identity) >= limits.subscriptionsPerPrincipal) {
        return refusal(
          'subscriptions-per-principal',
          `At most ${limits.subscriptionsPerPrincipal} subscriptions for these credentials across their connections.`,
        );
      }
      // The first subscribe with this id was admitted while this one waited: refused, and not counted.
      if (subscriber.reserved.has(id)) return idInUse(subscriber, id);
      subscriber.subscriptions += 1;
      subscriptionsOf.add(subscriber.identity, 1);
      subscriber.reserved.add(id);
      return undefined;
    },
    release,
    start: async (subscriber, id, request, sink) => {
      // The connection's credentials were found no longer valid after this subscribe was admitted (it is being closed).
      if (!connections.has(subscriber)) return credentialsGone();
      if (!subscriber.reserved.has(id)) return completedBeforeStart();
      const prepared = prepareSubscription(request.document, request.operationName, request.variables);
      // Refused here, its place is given back as the transport completes it.
      if (!prepared) return [new GraphQLError('This subscription field is not served.')];
      // A browser's EventSource reconnects to the same URL: its Last-Event-ID is newer than an `after` written there.
      const after = request.lastEventId ?? prepared.after ?? request.after;
      if (after !== null && !POSITION.test(after))
        return [
          appError(ErrorCode.BAD_REQUEST, '`after` is not a position of the event log (`<milliseconds>-<sequence>`).', { field: 'after' }),
        ];
      await bus.ready();
      // Refused before it starts when the log no longer holds the position (graphql-ws then sends an `error` message).
      if (after !== null && (await bus.read(after, after, 0)) === null) {
        subscriptionResumes.inc({ outcome: 'expired' });
        return [eventsExpired()];
      }
      if (!connections.has(subscriber)) return credentialsGone();
      if (!subscriber.reserved.has(id)) return completedBeforeStart();
      // From here to the join nothing waits: every event after `through` reaches the group.
      const through = bus.position();
      const groupKey = `${JSON.stringify(subscriber.principal)}|${prepared.text}|${JSON.stringify(prepared.variables)}`;
      let group = groups.get(groupKey);
      if (!group) {
        group = new SubscriberGroup(subscriber.principal, prepared, resolveFor, logger, () => bus.position());
        groups.set(groupKey, group);
      }
      const joined = group;
      // The subscription takes over its reserved place, and gives it back when it ends.
      subscriber.reserved.delete(id);
      const member = new Member(sink, subscriber.transport, after);
      joined.join(member);
      if (after !== null) {
        member.hold();
        void resume(member, joined, after, through);
      }
      return {
        end: () => {
          if (member.ended) return;
          member.ended = true;
          joined.members.delete(member);
          if (joined.members.size === 0 && groups.get(groupKey) === joined) groups.delete(groupKey);
          release(subscriber);
        },
      };
    },
    sessionEnded: (headers) => {
      const key = sessionTokenKey(headers);
      if (key === null) return;
      for (const subscriber of connections)
        if (subscriber.tokenKey === key) endConnection(subscriber, 'session-ended', 'The session has ended.');
    },
    subscribers: () => {
      const counts: Record<Transport, number> = { 'graphql-ws': 0, sse: 0, multipart: 0 };
      for (const group of groups.values()) for (const member of group.members.keys()) counts[member.transport] += 1;
      return counts;
    },
    close: () => {
      unsubscribe();
      for (const subscriber of connections) endConnection(subscriber, 'restarting', 'The gateway is restarting: reconnect.');
    },
  };
}
