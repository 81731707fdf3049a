import { ErrorCode } from '../../platform/graphql/errors.js';
import type { Server } from 'node:http';
import { getOperationAST, GraphQLError, Kind, OperationTypeNode, parseType, print, type DocumentNode, type ExecutionResult, type FormattedExecutionResult, type FieldNode, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { BusEvent, EventBus } from '../../platform/messaging/event-bus.js';
import { eventBusLag } from '../../platform/telemetry/metrics.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { principalIdentity, type Principal } from '../../platform/security/principal.js';
import { ownValue } from '../../platform/security/own.js';

/** How a subscription field is served: the events that trigger it, and the query field that resolves one. */
export interface SubscriptionRoute {
  events: readonly string[];
  /** The Query field that reads the event's object for the subscriber, and its one argument. */
  queryField: string;
  argument: string;
  argumentType: string;
  /** The argument's value, from the event's payload. */
  key: (payload: Record<string, unknown>) => unknown;
}

/** Every subscription field of the composed schema and how it is served. */
export const SUBSCRIPTION_ROUTES: Readonly<Record<string, SubscriptionRoute>> = {
  cardAuthorizations: { events: ['card.authorization'], queryField: 'cardAuthorization', argument: 'messageId', argumentType: 'ID!', key: (p) => p.messageId },
  cardStatusChanged: { events: ['card.status'], queryField: 'card', argument: 'SvcCardId', argumentType: 'ID!', key: (p) => p.SvcCardId },
  paymentLinkStatusChanged: { events: ['payment_link.status'], queryField: 'paymentLink', argument: 'svcTransactionId', argumentType: 'ID', key: (p) => p.svcTransactionId },
  achPaymentUpdated: { events: ['ach.debit', 'ach.settled', 'ach.return'], queryField: 'achPayment', argument: 'svcTransactionId', argumentType: 'ID!', key: (p) => p.svcTransactionId },
  kycApplicationCompleted: { events: ['application.completed'], queryField: 'application', argument: 'applicationId', argumentType: 'ID!', key: (p) => p.applicationId },
  webhookDeliveryAttempted: { events: ['webhook.attempt'], queryField: 'delivery', argument: 'deliveryId', argumentType: 'ID!', key: (p) => p.deliveryId },
};

/**
 * Whether an event concerns the principal at all (the object's own resolver then decides what
 * it may see): a user's own, an aggregator's own, a merchant's own; internal services see all.
 */
export function mayReceive(principal: Principal, event: BusEvent): boolean {
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
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 25;
/** How often a connection's credentials are checked again (a logout, a revoked token, an expired JWT). */
const RECHECK_MS = 60_000;

/** A subscription turned into the query that resolves one of its events: same selection, same response key. */
export interface PreparedSubscription {
  route: SubscriptionRoute;
  responseKey: string;
  query: DocumentNode;
  /** The query's text: subscribers with the same text and principal share each event's resolution. */
  text: string;
}

const KEY_VARIABLE = '__eventKey';

/** Prepares a validated subscription document; null when its root field is not one the gateway serves. */
export function prepareSubscription(document: DocumentNode, operationName: string | null | undefined): PreparedSubscription | null {
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
    arguments: [{ kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: route.argument }, value: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: KEY_VARIABLE } } }],
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
          { kind: Kind.VARIABLE_DEFINITION, variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: KEY_VARIABLE } }, type: parseType(route.argumentType) },
        ],
        selectionSet: { kind: Kind.SELECTION_SET, selections: [root] },
      },
      ...document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION),
    ],
  };
  return { route, responseKey, query, text: print(query) };
}

/** Largest amount a subscriber's socket may hold unsent before events for it are skipped: a subscriber that cannot keep up loses events rather than the gateway's memory. */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
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

  constructor(readonly socket: WebSocket, id: string, private readonly onClose: () => void) {
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
export type ExecuteAs = (document: DocumentNode | string, variables: Record<string, unknown>, principal: Principal) => Promise<FormattedExecutionResult>;

export interface SubscriptionServerOptions {
  server: Server;
  path: string;
  schema: () => GraphQLSchema;
  bus: EventBus;
  /** The principal of a connection, from the `connection_init` payload read as HTTP headers; throws when refused. */
  authenticate: (headers: Record<string, string | undefined>) => Promise<Principal>;
  execute: ExecuteAs;
  logger: Logger;
  /** Largest message a client may send (the HTTP body limit). */
  maxPayloadBytes: number;
  /** Whether a subscription's text may run (trusted documents); every one may when not given. */
  isTrusted?: (query: string) => boolean;
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

  constructor(readonly principal: Principal, readonly prepared: PreparedSubscription, readonly variables: Record<string, unknown>, private readonly logger: Logger) {}

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

/**
 * Serves subscriptions over graphql-ws on the gateway's HTTP server. One bus listener per gateway
 * fans events out to groups of alike subscribers; each event is resolved with the group's
 * selection through the gateway's query execution, once per event and group however many
 * subscribers the group holds, serialized once, and written to each member's socket. Events
 * already seen (an outbox engine may publish one twice) are dropped.
 */
export function startSubscriptionServer(options: SubscriptionServerOptions): { close(): Promise<void>; subscribers(): number } {
  const { logger } = options;
  const wss = new WebSocketServer({ server: options.server, path: options.path, maxPayload: options.maxPayloadBytes });
  const connections = new WeakMap<object, { principal: Principal; headers: Record<string, string>; subscriptions: number; timer: NodeJS.Timeout }>();
  /** Checks a connection's credentials again; closes it (4401) when they no longer hold. */
  const recheck = async (ctx: object, socket: WebSocket): Promise<boolean> => {
    const connection = connections.get(ctx);
    if (!connection) return false;
    try {
      const principal = await options.authenticate(connection.headers);
      if (principalKey(principal) === principalKey(connection.principal)) return true;
    } catch {
      // Refused: closed below.
    }
    clearInterval(connection.timer);
    connections.delete(ctx);
    socket.close(4401, 'Unauthorized');
    return false;
  };
  /** By the whole principal, query text and variables: only subscribers that are exactly alike share a resolution. */
  const groups = new Map<string, SubscriberGroup>();
  const seen = new Set<string>();

  /** Resolves one event for a group; null when the group may not see the object after all (its own resolver decided). */
  const resolveFor = async (group: SubscriberGroup, event: BusEvent): Promise<ExecutionResult | null> => {
    const { prepared } = group;
    try {
      // The query's text, not its document: Apollo caches parsing, validation and the query plan by text.
      const result = await options.execute(prepared.text, { ...group.variables, [KEY_VARIABLE]: prepared.route.key(event.payload) }, group.principal);
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
    const storedAt = Date.parse(event.dtsCreated);
    if (Number.isFinite(storedAt)) eventBusLag.observe(Math.max(0, Date.now() - storedAt) / 1000);
    if (seen.size > 10_000) seen.delete(seen.values().next().value!);
    for (const group of groups.values()) {
      if (!group.prepared.route.events.includes(event.type) || !mayReceive(group.principal, event)) continue;
      group.push(resolveFor(group, event));
    }
  });

  const disposable = useServer(
    {
      schema: () => options.schema(),
      onConnect: async (ctx) => {
        const params = (ctx.connectionParams ?? {}) as Record<string, unknown>;
        const headers = Object.fromEntries(Object.entries(params).filter(([, v]) => typeof v === 'string').map(([k, v]) => [k.toLowerCase(), v as string]));
        try {
          const principal = await options.authenticate(headers);
          if (!SUBSCRIBERS.has(principal.kind)) return false;
          const timer = setInterval(() => void recheck(ctx, ctx.extra.socket), RECHECK_MS);
          timer.unref();
          ctx.extra.socket.once('close', () => clearInterval(timer));
          connections.set(ctx, { principal, headers, subscriptions: 0, timer });
          return true;
        } catch {
          return false;
        }
      },
      onSubscribe: async (ctx, _id, payload) => {
        if (options.isTrusted && !options.isTrusted(payload.query)) {
          return [new GraphQLError('This deployment runs registered operations only (trusted documents), and this operation is not one of them.', { extensions: { code: ErrorCode.OPERATION_NOT_TRUSTED } })];
        }
        // Each operation checks the credentials again, so a logout or revocation takes effect at once.
        if (!(await recheck(ctx, ctx.extra.socket))) return [new GraphQLError('The connection credentials are no longer valid.')];
        const connection = connections.get(ctx)!;
        if (connection.subscriptions >= MAX_SUBSCRIPTIONS_PER_CONNECTION) return [new GraphQLError(`At most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions per connection.`)];
        return undefined;
      },
      context: (ctx, id) => ({ principal: connections.get(ctx)?.principal, connection: connections.get(ctx), id, socket: ctx.extra.socket }),
      execute: async (args) => (await options.execute(args.document, (args.variableValues ?? {}) as Record<string, unknown>, (args.contextValue as { principal: Principal }).principal)) as ExecutionResult,
      subscribe: (args) => {
        const { principal, connection, id, socket } = args.contextValue as { principal: Principal | undefined; connection: { subscriptions: number } | undefined; id: string; socket: WebSocket };
        // The connection's credentials were found no longer valid after this subscribe was accepted (it is being closed).
        if (!principal || !connection) return { errors: [{ message: 'The connection credentials are no longer valid.' }] } as unknown as ExecutionResult;
        const prepared = prepareSubscription(args.document, args.operationName);
        if (!prepared) return { errors: [{ message: 'This subscription field is not served.' }] } as unknown as ExecutionResult;
        const variables = (args.variableValues ?? {}) as Record<string, unknown>;
        const groupKey = `${JSON.stringify(principal)}|${prepared.text}|${JSON.stringify(variables)}`;
        let group = groups.get(groupKey);
        if (!group) {
          group = new SubscriberGroup(principal, prepared, variables, logger);
          groups.set(groupKey, group);
        }
        const joined = group;
        const member = new Member(socket, id, () => {
          joined.members.delete(member);
          if (joined.members.size === 0 && groups.get(groupKey) === joined) groups.delete(groupKey);
          connection.subscriptions -= 1;
        });
        connection.subscriptions += 1;
        joined.join(member);
        return member;
      },
      onError: (_ctx, id, _payload, errors) => {
        logger.info('subscription refused', { id, errors: errors.map((e) => e.message) });
      },
    },
    wss,
  );
  return {
    subscribers: () => [...groups.values()].reduce((count, group) => count + group.members.size, 0),
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
