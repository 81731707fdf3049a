import { ownValue } from './own.js';
import type { Principal } from './principal.js';

/** Who may see an event: the user, aggregator or merchant it concerns (none: only internal listeners). */
export interface EventAudience {
  SvcUserId?: string;
  svcAggregatorId?: string;
  svcMerchantId?: string;
}

/** An audit record as the subgraph that acted stores it in its outbox, for compliance to append. */
export interface AuditRecordPayload {
  action: AuditAction;
  /** When the act happened (ISO 8601). */
  dts: string;
  /** Who acted: the caller's kind and id (null for an anonymous caller, such as a failed login). */
  actorKind: Principal['kind'] | 'system';
  actorId: string | null;
  /** What was acted on: a user, a session, a card, a payment link, an actor of the lockout. */
  subjectType: string | null;
  subjectId: string | null;
  requestId: string | null;
  clientIp: string | null;
  details: AuditDetails;
}

/**
 * Every event a subgraph stores in its outbox, by name, with its payload: the one list that
 * producers, dispatchers and the gateway's subscriptions share.
 */
export interface EventPayloads {
  /** Sessions ended before their expiry; only gateways listen (their memory of live sessions). */
  'sessions.ended': { sessionId: string } | { SvcUserId: string } | { aggregatorLogin: string };
  'card.status': { SvcCardId: string; status: string; isActive: boolean };
  'card.authorization': {
    messageId: string;
    messageType: string;
    SvcCardId: string;
    responseCode: string;
    decidedBy: string;
    transactionId: string | null;
    /** On an approved message that moves money: what payments records. */
    transaction: CardTransactionPayload | null;
    /** On an approved reversal of an authorization: the hold payments releases. */
    releasesHold: { SvcAccountId: string; holdId: string } | null;
  };
  'payment_link.status': { svcTransactionId: string; svcMerchantId: string; status: string; previousStatus: string | null };
  'ach.debit': { svcTransactionId: string; entryDate: string; /** Decimal text, USD. */ amount: string };
  'ach.return': { svcTransactionId: string; entryDate: string; /** Decimal text, USD. */ amount: string; returnCode: string | null };
  'ach.settled': { svcTransactionId: string; status: 'Settled' };
  'application.completed': { applicationId: string; customerId: string; outcome: string | null };
  'webhook.attempt': { deliveryId: string; number: number; outcome: 'delivered' | 'failed'; httpStatus: number | null };
  'audit.recorded': AuditRecordPayload;
  /**
   * A user's restrictions or procedural restrictions changed (compliance's operator mutations),
   * so that a read model of them (card authorization's) refetches that user. SvcUserId null: the
   * platform defaults changed, which concerns every user without restrictions of their own.
   */
  'restrictions.changed': { SvcUserId: string | null };
}

/** What payments records of an approved card message that moves money: the schema's CardTransactionInput, less the messageId. */
export interface CardTransactionPayload {
  SvcAccountId: string;
  SvcUserId: string;
  SvcCardId: string;
  direction: 'debit' | 'credit';
  /** Decimal text, in `currency`. */
  amount: string;
  currency: string;
  narrative: string | null;
  reference: string | null;
  /** The hold the message placed while decided (payments releases it once posted), or null. */
  holdId: string | null;
}

/** What compliance counts of an `ach.debit` or `ach.return` event: a debit entered, or a debit returned with a code. */
export interface AchActivity {
  /** The outbox event's id: applying an activity twice counts it once. */
  eventId: string;
  kind: 'debit' | 'return';
  svcAggregatorId: string;
  svcTransactionId: string;
  /** The debit's effective entry date, YYYY-MM-DD: returns count against the day of their debit. */
  entryDate: string;
  /** Decimal text, in US dollars. */
  amount: string;
  returnCode: string | null;
}

/** The name of an event. */
export type EventType = keyof EventPayloads;

/** Where one type of event goes. */
export interface EventRoute {
  readonly bus: boolean;
  readonly forwarded: boolean;
}

/**
 * Where each event goes. `bus`: published to every gateway (subscriptions, session memory).
 * `forwarded`: carried through the graph to the subgraph that consumes it (compliance counts ACH
 * debits and returns, and keeps the audit log; payments records approved card messages).
 */
const EVENT_ROUTES: { readonly [T in EventType]: EventRoute } = {
  'sessions.ended': { bus: true, forwarded: false },
  'card.status': { bus: true, forwarded: false },
  'card.authorization': { bus: true, forwarded: true },
  'payment_link.status': { bus: true, forwarded: false },
  'ach.debit': { bus: true, forwarded: true },
  'ach.return': { bus: true, forwarded: true },
  'ach.settled': { bus: true, forwarded: false },
  'application.completed': { bus: true, forwarded: false },
  'webhook.attempt': { bus: true, forwarded: false },
  'audit.recorded': { bus: false, forwarded: true },
  'restrictions.changed': { bus: true, forwarded: false },
};

/** Where events of `type` go. */
export function routeOf(type: EventType): EventRoute {
  const route = ownValue(EVENT_ROUTES, type);
  if (!route) throw new Error(`${type} is not an event type.`);
  return route;
}

/** The event types some dispatcher forwards through the graph. */
export const FORWARDED_TYPES = (Object.keys(EVENT_ROUTES) as EventType[]).filter((type) => routeOf(type).forwarded);

/** An event stored in the same write path as the state change it reports; its `type` tells its payload. */
export type OutboxEvent<T extends EventType = EventType> = {
  [K in T]: {
    _id: string;
    type: K;
    audience: EventAudience;
    payload: EventPayloads[K];
    dtsCreated: Date;
    /** When the bus dispatcher published it; set at once for an event the bus does not carry. */
    dtsPublished: Date | null;
    /** When a forwarding dispatcher carried it; set at once for an event nobody forwards. */
    dtsForwarded?: Date | null;
    /** Why the receiver refused it, when a dispatcher parked it instead of carrying it. */
    refusal?: { dispatcher: string; error: string; dts: Date };
  };
}[T];

/** What the audit log records: security-relevant acts, each as it happened (or was refused). */
export const AUDIT_ACTIONS = [
  'LOGIN_SUCCEEDED',
  'LOGIN_FAILED',
  'LOGIN_REFUSED',
  'ACTOR_LOCKED',
  'TOKEN_ISSUED',
  'TOKEN_REVOKED',
  'PASSWORD_CHANGED',
  'CARD_TURNED_ON',
  'CARD_TURNED_OFF',
  'PAYMENT_LINK_STATUS_CHANGED',
  'WEBHOOK_CONFIGURED',
  'USER_BLOCKED',
  'USER_UNBLOCKED',
  'AGGREGATOR_CREATED',
  'AGGREGATOR_USER_CREATED',
  'RESTRICTION_SET',
  'RESTRICTION_REMOVED',
  'PROCEDURAL_RESTRICTION_PLACED',
  'PROCEDURAL_RESTRICTION_LIFTED',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Details are flat and never carry secrets: ids, names, statuses; no tokens, passwords or card numbers. */
export type AuditDetails = Record<string, string | number | boolean | null>;

/** The bus event the user subgraph publishes when sessions end before their expiry, so that no gateway answers them from memory. */
export const SESSIONS_ENDED = 'sessions.ended' satisfies EventType;

/** Which sessions a SESSIONS_ENDED event ends: one session, every session of a user, or of an aggregator user. */
export type SessionsEnded = EventPayloads[typeof SESSIONS_ENDED];

/** Whether a SESSIONS_ENDED payload ends the session of `principal`. */
export function endsSession(ended: Record<string, unknown>, principal: Principal): boolean {
  if ('sessionId' in principal && ended.sessionId === principal.sessionId) return true;
  if (principal.kind === 'user' && ended.SvcUserId === principal.userId) return true;
  return principal.kind === 'aggregator' && ended.aggregatorLogin === principal.login;
}
