/** The login channels only a service key may use: the caller is a service acting for a user, not the user's device. */
export const SERVICE_CHANNELS = ['statementGenerator', 'dicBuilder', 'chat'] as const;
export type ServiceChannel = (typeof SERVICE_CHANNELS)[number];

/**
 * What one service key may do, as configured (SERVICE_KEY_SCOPES): which service login channels
 * it may open sessions over, for which users (`'*'`, written out, for every user), and which root
 * fields it may call with its own key. Nothing else: a service key never reads a user's data.
 */
export interface ServiceScope {
  channels: readonly ServiceChannel[];
  users: readonly string[] | '*';
  fields: readonly string[];
}

/** Who is calling, as established once by the gateway. */
export type Principal =
  | { kind: 'anonymous' }
  | { kind: 'user'; userId: string; sessionId: string; channel: string }
  /** Someone onboarding on a device, between `POST /prospect/data` and registration. */
  | { kind: 'prospect'; prospectId: string; sessionId: string; deviceTag: string }
  /**
   * A user of an aggregator client. A `confined` token may read but not change anything: see
   * `requireAggregator`.
   */
  | { kind: 'aggregator'; svcAggregatorId: string; login: string; sessionId: string; tokenType: 'base' | 'confined' }
  /** A merchant of an aggregator, from a merchant JWT (`x-svc-jwtoken` on /public/merchant routes). */
  | { kind: 'merchant'; svcMerchantId: string; svcAggregatorId: string }
  /** A customer holding one payment link, from a customer JWT (`x-svc-jwtoken` on /public/customer routes). */
  | { kind: 'customer'; svcTransactionId: string; svcMerchantId: string; svcAggregatorId: string }
  /**
   * A service: one of the platform's own (no `scope`), or the holder of a service key, limited to
   * its key's `scope` (SERVICE_KEY_SCOPES).
   */
  | { kind: 'service'; service: string; scope?: ServiceScope };

/** The user subgraph's route that turns a `token` header into a principal, for the gateway only. Not part of the graph. */
export const SESSION_RESOLVE_PATH = '/internal/sessions/resolve';

/** What the session route answers: the principal of a live token and when its session expires, or null. */
export interface ResolvedSession {
  principal: Principal;
  /** ISO 8601. */
  dtsExpiry: string;
}

/**
 * Mutations whose answer carries a secret (a session token, a JWT, a device secret, a webhook
 * signing secret, a processor token). Their answers are never kept (an Idempotency-Key does not
 * apply to them: a repeat issues another, and the first is never stored outside its own database).
 */
export const CREDENTIAL_ISSUING_FIELDS: ReadonlySet<string> = new Set([
  'login',
  'aggregatorGetToken',
  'merchantToken',
  'customerToken',
  'registerDevice',
  'submitProspectData',
  'configureWebhook',
  'saveMerchant',
  'addCondorCard',
]);

/**
 * Who a principal is, by kind and id: a user by SvcUserId, an aggregator user by login (logins are
 * unique across aggregators), a merchant, a customer's link, a service by name. Null for anonymous callers.
 */
export function principalActor(principal: Principal | undefined): { kind: Exclude<Principal['kind'], 'anonymous'>; id: string } | null {
  switch (principal?.kind) {
    case 'user':
      return { kind: 'user', id: principal.userId };
    case 'prospect':
      return { kind: 'prospect', id: principal.prospectId };
    case 'aggregator':
      return { kind: 'aggregator', id: principal.login };
    case 'merchant':
      return { kind: 'merchant', id: principal.svcMerchantId };
    case 'customer':
      return { kind: 'customer', id: principal.svcTransactionId };
    case 'service':
      return { kind: 'service', id: principal.service };
    default:
      return null;
  }
}

/**
 * Who a principal is, whatever credential it came with: the same user after logging in again,
 * or a JWT however its signature is spelled, is the same caller. Null for anonymous callers.
 */
export function principalIdentity(principal: Principal | undefined): string | null {
  const actor = principalActor(principal);
  return actor ? `${actor.kind}:${actor.id}` : null;
}
