import { appError, ErrorCode } from '../../platform/contracts/errors.js';
import type { IncomingMessage, Server } from 'node:http';
import type { ApolloGateway } from '@apollo/gateway';
import {
  execute,
  getOperationAST,
  GraphQLError,
  Kind,
  OperationTypeNode,
  parseType,
  print,
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  type FieldNode,
  type GraphQLSchema,
} from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { BusEvent, EventBus } from '../../platform/messaging/event-bus.js';
import { eventBusLag, subscriptionRefusals, type SUBSCRIPTION_LIMITS } from '../../platform/telemetry/metrics.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { endsSession, SESSIONS_ENDED } from '../../platform/contracts/events.js';
import { principalIdentity, type Principal } from '../../platform/contracts/principal.js';
import { sessionTokenKey } from './authenticate.js';
import { refuseDocument, type DocumentLimits } from './document-limits.js';
import { addressGroup, type HitCounter } from './rate-limits.js';
import { ownValue } from '../../platform/contracts/own.js';
import type { EventPayloads, EventType } from '../../platform/contracts/events.js';
import { withGatewaySubscriptions } from '../../schema/compose.js';

/**
 * The Subscription fields the gateway serves: those of schema/gateway-subscriptions.graphql, the
 * declaration no subgraph makes (test/gateway/subscription-routes.test.ts holds the two together).
 */
export type SubscriptionField =
  | 'cardAuthorizations'
  | 'cardStatusChanged'
  | 'paymentLinkStatusChanged'
  | 'achPaymentUpdated'
  | 'kycApplicationCompleted'
  | 'webhookDeliveryAttempted';

/** How a subscription field is served: the catalogue's events that trigger it, and the query field that resolves one. */
export interface SubscriptionRoute<E extends EventType = EventType> {
  events: readonly E[];
  /** The Query field that reads the event's object for the subscriber, and its one argument. */
  queryField: string;
  argument: string;
  argumentType: string;
  /** The argument's value, from the payload of one of its events (a method: a route of some events is a route). */
  key(payload: EventPayloads[E]): unknown;
}

/** A route whose payload types follow from its events' names. */
function route<E extends EventType>(served: SubscriptionRoute<E>): SubscriptionRoute<E> {
  return served;
}

/** Every subscription field the gateway serves and how it is served. */
export const SUBSCRIPTION_ROUTES: { readonly [F in SubscriptionField]: SubscriptionRoute } = {
  cardAuthorizations: route({
    events: ['card.authorization'],
    queryField: 'cardAuthorization',
    argument: 'messageId',
    argumentType: 'ID!',
    key: (p) => p.messageId,
  }),
  cardStatusChanged: route({
    events: ['card.status'],
    queryField: 'card',
    argument: 'SvcCardId',
    argumentType: 'ID!',
    key: (p) => p.SvcCardId,
  }),
  paymentLinkStatusChanged: route({
    events: ['payment_link.status'],
    queryField: 'paymentLink',
    argument: 'svcTransactionId',
    argumentType: 'ID',
    key: (p) => p.svcTransactionId,
  }),
  achPaymentUpdated: route({
    events: ['ach.debit', 'ach.settled', 'ach.return'],
    queryField: 'achPayment',
    argument: 'svcTransactionId',
    argumentType: 'ID!',
    key: (p) => p.svcTransactionId,
  }),
  kycApplicationCompleted: route({
    events: ['application.completed'],
    queryField: 'application',
    argument: 'applicationId',
    argumentType: 'ID!',
    key: (p) => p.applicationId,
  }),
  webhookDeliveryAttempted: route({
    events: ['webhook.attempt'],
    queryField: 'delivery',
    argument: 'deliveryId',
    argumentType: 'ID!',
    key: (p) => p.deliveryId,
  }),
};

/** A bus event of the catalogue: its payload is its type's. */
type CatalogueEvent = BusEvent & { type: EventType; payload: EventPayloads[EventType] };

/** Whether a bus event is one of a route's (then its payload is that event's, as the catalogue has it). */
function triggers(route: SubscriptionRoute, event: BusEvent): event is CatalogueEvent {
  return (route.events as readonly string[]).includes(event.type);
}

/**
 * The gateway's API schema with the subscriptions it serves (schema/gateway-subscriptions.graphql),
 * one per composed schema: the schema of both HTTP (validation, introspection) and graphql-ws.
 */
export function withServedSubscriptions(subscriptionsSdl: string): (apiSchema: GraphQLSchema) => GraphQLSchema {
  const served = new WeakMap<GraphQLSchema, GraphQLSchema>();
  return (apiSchema) => {
    let schema = served.get(apiSchema);
    if (!schema) {
      schema = withGatewaySubscriptions(apiSchema, subscriptionsSdl);
      served.set(apiSchema, schema);
    }
    return schema;
  };
}

type GatewayExecutor = Awaited<ReturnType<ApolloGateway['load']>>['executor'];

/**
 * ApolloGateway's executor, for a schema with the served subscriptions: a subscription sent over
 * HTTP is refused (they are served on graphql-ws), and an operation of introspection alone runs
 * against the served schema (ApolloGateway answers introspection from the composed schema, which
 * has no Subscription type); every other operation is the gateway's.
 */
export function servedExecutor(executor: GatewayExecutor): GatewayExecutor {
  return async (requestContext) => {
    const { operation } = requestContext;
    if (operation.operation === OperationTypeNode.SUBSCRIPTION) {
      return {
        errors: [
          appError(ErrorCode.BAD_REQUEST, 'Subscriptions are served over graphql-ws on /graphql, not over HTTP.', { httpStatus: 400 }),
        ],
      };
    }
    if (operation.selectionSet.selections.every((selection) => selection.kind === Kind.FIELD && selection.name.value.startsWith('__'))) {
      return await execute({
        schema: requestContext.schema,
        document: requestContext.document,
        operationName: requestContext.operationName,
        variableValues: requestContext.request.variables,
      });
    }
    return executor(requestContext);
  };
}

/**
 * Whether an event concerns the principal at all (the object's own resolver then decides what
 * it may see): a user's own, an aggregator's own, a merchant's own; internal services see all.
 */
function mayReceive(principal: Principal, event: BusEvent): boolean {
  switch (principal.kind) {
    case 'user':
      return event.audience.SvcUserId === principal.userId;
    case 'aggregator':
      return event.audience.svcAggregatorId === principal.svcAggregatorId;
    case 'merchant':
      return event.audience.svcMerchantId === principal.svcMerchantId;
    default:
      return false;
  }
}

/** Who may subscribe: end users, aggregators and merchants (a service key is for one job, not every event). */
const SUBSCRIBERS: ReadonlySet<Principal['kind']> = new Set(['user', 'aggregator', 'merchant']);
/** Subscriptions one connection may hold at once. */
const MAX_SUBSCRIPTIONS_PER_CONNECTION = 25;
/** How often a connection's credentials are checked again (a logout, a revoked token, an expired JWT). */
const RECHECK_MS = 60_000;

/** A subscription turned into the query that resolves one of its events: same selection, same response key. */
interface PreparedSubscription {
  route: SubscriptionRoute;
  responseKey: string;
  query: DocumentNode;
  /** The query's text: subscribers with the same text and principal share each event's resolution. */
  text: string;
}

const KEY_VARIABLE = '__eventKey';
/**
 * Tokens a subscription's event query may have beyond its document (the key variable's definition
 * and argument, with room): the parser's limit is raised by this much, so that a document within
 * GRAPHQL_MAX_TOKENS still resolves its events.
 */
export const PREPARED_SUBSCRIPTION_TOKENS = 64;

/** Prepares a validated subscription document; null when its root field is not one the gateway serves. */
function prepareSubscription(document: DocumentNode, operationName: string | null | undefined): PreparedSubscription | null {
  const operation = getOperationAST(document, operationName);
  const field = operation?.selectionSet.selections[0];
  if (!operation || operation.operation !== OperationTypeNode.SUBSCRIPTION || field?.kind !== Kind.FIELD) return null;
  const route = ownValue(SUBSCRIPTION_ROUTES, field.name.value);
  if (!route) return null;
  const responseKey = field.alias?.value ?? field.name.value;
  const root: FieldNode = {
    kind: Kind.FIELD,
    alias: { kind: Kind.NAME, value: responseKey },
    name: { kind: Kind.NAME, value: route.queryField },
    arguments: [
      {
        kind: Kind.ARGUMENT,
        name: { kind: Kind.NAME, value: route.argument },
        value: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: KEY_VARIABLE } },
      },
    ],
    directives: field.directives ?? [],
    ...(field.selectionSet ? { selectionSet: field.selectionSet } : {}),
  };
  const query: DocumentNode = {
    kind: Kind.DOCUMENT,
    definitions: [
      {
        ...operation,
        operation: OperationTypeNode.QUERY,
        variableDefinitions: [
          ...(operation.variableDefinitions ?? []),
          {
            kind: Kind.VARIABLE_DEFINITION,
            variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: KEY_VARIABLE } },
            type: parseType(route.argumentType),
          },
        ],
        selectionSet: { kind: Kind.SELECTION_SET, selections: [root] },
      },
      ...document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION),
    ],
  };
  return { route, responseKey, query, text: print(query) };
}

/** Largest amount a subscriber's socket may hold unsent before events for it are skipped: a subscriber that cannot keep up loses events rather than the gateway's memory. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** Event resolutions a group may have waiting for delivery before its oldest are dropped. */
const MAX_PENDING_RESOLUTIONS = 1000;
const NEXT_SUFFIX = Buffer.from('}');

/**
 * One subscription's place in its group. graphql-ws holds it as the subscription's stream, which
 * never yields: the group writes each event's `next` message to the socket itself (serialized
 * once per group), and graphql-ws ends it with `return()` on `complete` or when the socket closes.
 */
class Member implements AsyncIterableIterator<ExecutionResult> {
  /** The `next` message up to its payload: `{"id":...,"type":"next","payload":`. */
  readonly prefix: Buffer;
  private ended: ((result: IteratorResult<ExecutionResult>) => void) | null = null;
  private done = false;

  constructor(
    readonly socket: WebSocket,
    id: string,
    private readonly onClose: () => void,
  ) {
    this.prefix = Buffer.from(`{"id":${JSON.stringify(id)},"type":"next","payload":`);
  }

  /** Writes one event's serialized result as this subscription's `next` message (a text frame, as graphql-ws sends). */
  send(payload: Buffer): void {
    if (this.done || this.socket.readyState !== this.socket.OPEN || this.socket.bufferedAmount > MAX_BUFFERED_BYTES) return;
    this.socket.send(Buffer.concat([this.prefix, payload, NEXT_SUFFIX]), { binary: false });
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.ended = resolve));
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    if (!this.done) {
      this.done = true;
      this.onClose();
      this.ended?.({ value: undefined, done: true });
      this.ended = null;
    }
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** Runs an operation through the gateway's own execution for a principal. */
export type ExecuteAs = (
  document: DocumentNode | string,
  variables: Record<string, unknown>,
  principal: Principal,
) => Promise<FormattedExecutionResult>;

/**
 * The bounds of one gateway's subscriptions: open connections per principal (who it is, however
 * its credential is spelled) and per client address (an IPv6 address by its /64), subscriptions
 * per principal across its connections, and subscribe messages per window per connection and per
 * principal.
 */
interface SubscriptionLimits {
  connectionsPerPrincipal: number;
  connectionsPerAddress: number;
  subscriptionsPerPrincipal: number;
  subscribesPerConnection: number;
  subscribesPerPrincipal: number;
  windowSeconds: number;
}

/** Room in a graphql-ws message beside its document: the envelope, the operation name, variables, extensions, or a `connection_init`'s credentials. */
export const SUBSCRIBE_MESSAGE_ALLOWANCE_BYTES = 64 * 1024;

/**
 * The largest message a subscription client may send: twice the document limit (a document's
 * quotes, backslashes and line breaks take two bytes each in JSON) plus the allowance. A larger
 * message closes the socket (1009) before it is read.
 */
export function subscribeMessageLimit(documentLimits: DocumentLimits): number {
  return 2 * documentLimits.maxBytes + SUBSCRIBE_MESSAGE_ALLOWANCE_BYTES;
}

/** The close code of a connection over a connection cap (graphql-ws clients do not retry it). */
const TOO_MANY_CONNECTIONS = 4429;
/** The close code of a connection whose session ended or whose credentials no longer hold. */
const SESSION_ENDED = 4401;

export interface SubscriptionServerOptions {
  server: Server;
  path: string;
  schema: () => GraphQLSchema;
  bus: EventBus;
  /** The principal of a connection, from the `connection_init` payload read as HTTP headers; throws when refused. */
  authenticate: (headers: Record<string, string | undefined>) => Promise<Principal>;
  execute: ExecuteAs;
  logger: Logger;
  /** Largest message a client may send (see `subscribeMessageLimit`). */
  maxPayloadBytes: number;
  /** Bounds of a subscribe message's document, checked before graphql-ws parses it. */
  documentLimits: DocumentLimits;
  limits: SubscriptionLimits;
  /** Counts subscribe messages per principal (shared by every gateway where it is Redis). */
  counter: HitCounter;
  /** The client address of an upgrade request (the socket's, or the proxy's header where it is trusted). */
  clientAddress: (request: IncomingMessage) => string | null;
  /** Whether a subscription's text may run (trusted documents); every one may when not given. */
  isTrusted?: (query: string) => boolean;
}

/** The server's handle: its count of subscriptions, the sessions ended on this gateway, and its stop. */
export interface SubscriptionServer {
  subscribers(): number;
  /** Closes (4401) the connections opened with the session token of these headers: its logout ran on this gateway. */
  sessionEnded(headers: Record<string, string | undefined>): void;
  close(): Promise<void>;
}

/** Who a principal is, for telling whether a connection's credentials still name the same one (and with the same rights). */
function principalKey(principal: Principal): string {
  const identity = principalIdentity(principal) ?? principal.kind;
  return principal.kind === 'aggregator' ? `${identity}:${principal.tokenType}` : identity;
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
  private readonly pending: Array<{ sequence: number; resolution: Promise<ExecutionResult | null> }> = [];
  private nextSequence = 0;
  private draining = false;

  constructor(
    readonly principal: Principal,
    readonly prepared: PreparedSubscription,
    readonly variables: Record<string, unknown>,
    private readonly logger: Logger,
  ) {}

  join(member: Member): void {
    this.members.set(member, this.nextSequence);
  }

  /** Queues an event's resolution, which never rejects. */
  push(resolution: Promise<ExecutionResult | null>): void {
    if (this.pending.length >= MAX_PENDING_RESOLUTIONS) this.pending.shift();
    this.pending.push({ sequence: this.nextSequence++, resolution });
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.pending.length > 0) {
        const { sequence, resolution } = this.pending.shift()!;
        const result = await resolution;
        if (!result || this.members.size === 0) continue;
        try {
          const payload = Buffer.from(JSON.stringify(result));
          for (const [member, joinedAt] of this.members) if (sequence >= joinedAt) member.send(payload);
        } catch (error) {
          // One event that cannot be sent is skipped; the ones behind it still go.
          this.logger.warn('subscription event not sent', { error: (error as Error).message });
        }
      }
    } finally {
      this.draining = false;
    }
  }
}

/** An acknowledged connection: who it is, what it holds, and its subscribe messages in the current window. */
interface Connection {
  principal: Principal;
  /** Who the principal is, for the caps (`principalIdentity`). */
  identity: string;
  headers: Record<string, string>;
  /** The hash of its session token, when it came with one (`sessionTokenKey`). */
  tokenKey: string | null;
  socket: WebSocket;
  /** Subscriptions held, those accepted and not yet started (in `reserved`) included. */
  subscriptions: number;
  /** Subscribe messages accepted by `onSubscribe` that have not become a subscription or been refused yet. */
  reserved: Set<string>;
  window: { count: number; resetAt: number };
  timer: NodeJS.Timeout;
}

/** Session-ended announcements kept, so that a connection authenticated while one arrived is checked against it. */
const RECENT_ANNOUNCEMENTS = 256;

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

/**
 * Serves subscriptions over graphql-ws on the gateway's HTTP server. One bus listener per gateway
 * fans events out to groups of alike subscribers; each event is resolved with the group's
 * selection through the gateway's query execution, once per event and group however many
 * subscribers the group holds, serialized once, and written to each member's socket. Events
 * already seen (an outbox engine may publish one twice) are dropped.
 *
 * Bounded per gateway: connections per principal and per client address (over either, the
 * connection is closed in `connection_init` with 4429), subscriptions per connection and per
 * principal, and subscribe messages per window per connection and per principal; each document's
 * size and tokens are checked before graphql-ws parses it. A session ended (a logout, a
 * revocation, a block: the `sessions.ended` announcement on the bus, or a logout served by this
 * gateway) closes its connections with 4401 at once; every connection's credentials are also
 * checked again on each subscribe and every minute, the bound when the bus carried nothing.
 */
export function startSubscriptionServer(options: SubscriptionServerOptions): SubscriptionServer {
  const { logger, limits } = options;
  const windowMs = limits.windowSeconds * 1000;
  const wss = new WebSocketServer({ server: options.server, path: options.path, maxPayload: options.maxPayloadBytes });
  const connections = new Map<object, Connection>();
  const connectionsOf = new Tally();
  const subscriptionsOf = new Tally();
  /** Open sockets by client address group, from the upgrade on (before their `connection_init`). */
  const socketsAt = new Tally();
  /** The latest session-ended announcements, numbered from the first. */
  const announced: Array<Record<string, unknown>> = [];
  let announcements = 0;

  /** Ends a connection's registration (its subscriptions release themselves as graphql-ws ends them). */
  const forget = (ctx: object): Connection | undefined => {
    const connection = connections.get(ctx);
    if (!connection) return undefined;
    connections.delete(ctx);
    clearInterval(connection.timer);
    connectionsOf.add(connection.identity, -1);
    for (const id of connection.reserved) release(connection, id);
    return connection;
  };
  /** Gives back a subscription's place (a reserved one by its id). */
  const release = (connection: Connection, id?: string): void => {
    if (id !== undefined && !connection.reserved.delete(id)) return;
    connection.subscriptions -= 1;
    subscriptionsOf.add(connection.identity, -1);
  };
  /** Closes a connection whose session ended or whose credentials no longer hold. */
  const end = (ctx: object, reason: string): void => {
    const connection = forget(ctx);
    connection?.socket.close(SESSION_ENDED, reason);
  };
  /** Checks a connection's credentials again; closes it (4401) when they no longer hold. */
  const recheck = async (ctx: object): Promise<boolean> => {
    const connection = connections.get(ctx);
    if (!connection) return false;
    const since = announcements;
    try {
      const principal = await options.authenticate(connection.headers);
      if (principalKey(principal) === principalKey(connection.principal) && !endedSince(since, principal)) return true;
    } catch {
      // Refused: closed below.
    }
    end(ctx, 'The credentials of this connection are no longer valid.');
    return false;
  };
  /** Whether an announcement since the `since`-th ended the principal's session (it may have overtaken the read that found it live). */
  const endedSince = (since: number, principal: Principal): boolean =>
    announcements - since > announced.length ||
    announced.slice(announced.length - (announcements - since)).some((ended) => endsSession(ended, principal));

  /** By the whole principal, query text and variables: only subscribers that are exactly alike share a resolution. */
  const groups = new Map<string, SubscriberGroup>();
  const seen = new Set<string>();

  /** Resolves one event for a group; null when the group may not see the object after all (its own resolver decided). */
  const resolveFor = async (group: SubscriberGroup, event: CatalogueEvent): Promise<ExecutionResult | null> => {
    const { prepared } = group;
    try {
      // The query's text, not its document: Apollo caches parsing, validation and the query plan by text.
      const result = await options.execute(
        prepared.text,
        { ...group.variables, [KEY_VARIABLE]: prepared.route.key(event.payload) },
        group.principal,
      );
      const value = result.data?.[prepared.responseKey];
      // Formatted errors travel to the client as they are.
      return value === null || value === undefined ? null : (result as ExecutionResult);
    } catch (error) {
      logger.warn('subscription event not resolved', { eventId: event.id, error: (error as Error).message });
      return null;
    }
  };

  const unsubscribe = options.bus.subscribe((event) => {
    if (seen.has(event.id)) return;
    seen.add(event.id);
    if (seen.size > 10_000) seen.delete(seen.values().next().value!);
    const storedAt = Date.parse(event.dtsCreated);
    if (Number.isFinite(storedAt)) eventBusLag.observe(Math.max(0, Date.now() - storedAt) / 1000);
    if (event.type === SESSIONS_ENDED) {
      announcements += 1;
      announced.push(event.payload);
      if (announced.length > RECENT_ANNOUNCEMENTS) announced.shift();
      for (const [ctx, connection] of connections) if (endsSession(event.payload, connection.principal)) end(ctx, 'The session has ended.');
      return;
    }
    for (const group of groups.values()) {
      if (!triggers(group.prepared.route, event) || !mayReceive(group.principal, event)) continue;
      group.push(resolveFor(group, event));
    }
  });

  const addressOf = (request: IncomingMessage): string => {
    const ip = options.clientAddress(request);
    return ip ? addressGroup(ip) : 'unknown';
  };
  /** Closes a connection over a cap, with the reason (the 4403 graphql-ws sends after it is then ignored). */
  const refuseConnection = (socket: WebSocket, limit: (typeof SUBSCRIPTION_LIMITS)[number], reason: string): false => {
    subscriptionRefusals.inc({ limit });
    socket.close(TOO_MANY_CONNECTIONS, reason);
    return false;
  };
  const refusal = (limit: (typeof SUBSCRIPTION_LIMITS)[number], message: string, retryAfterSeconds?: number): GraphQLError[] => {
    subscriptionRefusals.inc({ limit });
    return [
      retryAfterSeconds === undefined
        ? appError(ErrorCode.OPERATION_LIMIT_EXCEEDED, message)
        : appError(ErrorCode.RATE_LIMITED, message, { retryAfterSeconds }),
    ];
  };

  const disposable = useServer(
    {
      schema: () => options.schema(),
      onConnect: async (ctx) => {
        const { socket, request } = ctx.extra;
        if (socketsAt.get(addressOf(request)) > limits.connectionsPerAddress) {
          return refuseConnection(
            socket,
            'connections-per-address',
            `Too many connections from this address: at most ${limits.connectionsPerAddress}.`,
          );
        }
        const params = (ctx.connectionParams ?? {}) as Record<string, unknown>;
        const headers: Record<string, string> = Object.create(null) as Record<string, string>;
        for (const [name, value] of Object.entries(params)) if (typeof value === 'string') headers[name.toLowerCase()] = value;
        const since = announcements;
        let principal: Principal;
        try {
          principal = await options.authenticate(headers);
        } catch {
          return false;
        }
        if (!SUBSCRIBERS.has(principal.kind) || endedSince(since, principal) || socket.readyState !== socket.OPEN) return false;
        const identity = principalIdentity(principal) ?? principal.kind;
        if (connectionsOf.get(identity) >= limits.connectionsPerPrincipal) {
          return refuseConnection(
            socket,
            'connections-per-principal',
            `Too many connections for these credentials: at most ${limits.connectionsPerPrincipal}.`,
          );
        }
        const timer = setInterval(() => void recheck(ctx), RECHECK_MS);
        timer.unref();
        connectionsOf.add(identity, 1);
        connections.set(ctx, {
          principal,
          identity,
          headers,
          tokenKey: sessionTokenKey(headers),
          socket,
          subscriptions: 0,
          reserved: new Set(),
          window: { count: 0, resetAt: 0 },
          timer,
        });
        socket.once('close', () => forget(ctx));
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const connection = connections.get(ctx);
        if (!connection) return [new GraphQLError('The connection credentials are no longer valid.')];
        const now = Date.now();
        if (connection.window.resetAt <= now) connection.window = { count: 0, resetAt: now + windowMs };
        connection.window.count += 1;
        if (connection.window.count > limits.subscribesPerConnection) {
          const retryAfterSeconds = Math.max(1, Math.ceil((connection.window.resetAt - now) / 1000));
          return refusal(
            'subscribe-rate-per-connection',
            `Too many subscribe messages on this connection: at most ${limits.subscribesPerConnection} in ${limits.windowSeconds} s; try again in ${retryAfterSeconds} s.`,
            retryAfterSeconds,
          );
        }
        // Hashed for the trusted documents only once the message has been counted.
        if (options.isTrusted && !options.isTrusted(payload.query)) {
          return [
            new GraphQLError(
              'This deployment runs registered operations only (trusted documents), and this operation is not one of them.',
              { extensions: { code: ErrorCode.OPERATION_NOT_TRUSTED } },
            ),
          ];
        }
        const oversized = refuseDocument(payload.query, options.documentLimits, 'subscription');
        if (oversized) return [oversized];
        try {
          const { count, resetMs } = await options.counter.hit(`ws:${connection.identity}`, windowMs);
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
        if (!(await recheck(ctx))) return [new GraphQLError('The connection credentials are no longer valid.')];
        // Checked and reserved in one step after the last wait: messages handled side by side cannot all pass the caps.
        if (connection.subscriptions >= MAX_SUBSCRIPTIONS_PER_CONNECTION)
          return refusal('subscriptions-per-connection', `At most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions per connection.`);
        if (subscriptionsOf.get(connection.identity) >= limits.subscriptionsPerPrincipal) {
          return refusal(
            'subscriptions-per-principal',
            `At most ${limits.subscriptionsPerPrincipal} subscriptions for these credentials across their connections.`,
          );
        }
        connection.subscriptions += 1;
        subscriptionsOf.add(connection.identity, 1);
        connection.reserved.add(id);
        return undefined;
      },
      context: (ctx, id) => ({ connection: connections.get(ctx), id }),
      execute: async (args): Promise<ExecutionResult> => {
        const { connection } = args.contextValue as { connection: Connection | undefined };
        if (!connection) return { errors: [new GraphQLError('The connection credentials are no longer valid.')] };
        const result: FormattedExecutionResult = await options.execute(args.document, args.variableValues ?? {}, connection.principal);
        // Formatted errors travel to the client as they are.
        return result as ExecutionResult;
      },
      subscribe: (args) => {
        const { connection, id } = args.contextValue as { connection: Connection | undefined; id: string };
        // The connection's credentials were found no longer valid after this subscribe was accepted (it is being closed).
        if (!connection || !connection.reserved.has(id))
          return { errors: [new GraphQLError('The connection credentials are no longer valid.')] };
        const prepared = prepareSubscription(args.document, args.operationName);
        // Refused here, its place is given back as graphql-ws completes it.
        if (!prepared) return { errors: [new GraphQLError('This subscription field is not served.')] };
        const { principal, socket } = connection;
        const variables = (args.variableValues ?? {}) as Record<string, unknown>;
        const groupKey = `${JSON.stringify(principal)}|${prepared.text}|${JSON.stringify(variables)}`;
        let group = groups.get(groupKey);
        if (!group) {
          group = new SubscriberGroup(principal, prepared, variables, logger);
          groups.set(groupKey, group);
        }
        const joined = group;
        // The subscription takes over its reserved place, and gives it back when it ends.
        connection.reserved.delete(id);
        const member = new Member(socket, id, () => {
          joined.members.delete(member);
          if (joined.members.size === 0 && groups.get(groupKey) === joined) groups.delete(groupKey);
          release(connection);
        });
        joined.join(member);
        return member;
      },
      onError: (ctx, id, _payload, errors) => {
        const connection = connections.get(ctx);
        if (connection) release(connection, id);
        // Counted by their metrics; a line each at debug only, so that a client sending refusals in a loop does not fill the log.
        logger.debug('subscription refused', { id, errors: errors.map((e) => e.message) });
      },
      onComplete: (ctx, id) => {
        const connection = connections.get(ctx);
        if (connection) release(connection, id);
      },
    },
    wss,
  );
  // After graphql-ws's own listener, which has given the socket its error handler.
  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const address = addressOf(request);
    socketsAt.add(address, 1);
    socket.once('close', () => socketsAt.add(address, -1));
    // A message over the size limit is a refusal (ws closes the socket with 1009), not the internal error graphql-ws reports on stderr.
    const reportInternal = socket.listeners('error') as Array<(error: Error) => void>;
    socket.removeAllListeners('error');
    socket.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH')
        logger.info('subscription message over the size limit', { limit: options.maxPayloadBytes });
      else for (const report of reportInternal) report.call(socket, error);
    });
  });
  return {
    subscribers: () => [...groups.values()].reduce((count, group) => count + group.members.size, 0),
    sessionEnded: (headers) => {
      const key = sessionTokenKey(headers);
      if (key === null) return;
      for (const [ctx, connection] of connections) if (connection.tokenKey === key) end(ctx, 'The session has ended.');
    },
    close: async () => {
      unsubscribe();
      // 1012 (service restart): clients reconnect, through the load balancer, to another gateway.
      // One that does not finish the closing handshake within a second is cut.
      for (const client of wss.clients) client.close(1012, 'The gateway is restarting: reconnect.');
      for (let waited = 0; wss.clients.size > 0 && waited < 1000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      for (const client of wss.clients) client.terminate();
      await disposable.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
