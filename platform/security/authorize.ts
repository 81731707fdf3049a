import { appError, ErrorCode } from '../contracts/errors.js';
import type { Principal } from '../contracts/principal.js';
import { isInternalService } from './service-scope.js';

/** The id of the end user behind the principal; anyone else is refused as unauthenticated. */
export function requireUser(principal: Principal): string {
  if (principal.kind !== 'user') throw appError(ErrorCode.UNAUTHENTICATED, 'This operation needs an end-user token in the `token` header.');
  return principal.userId;
}

/**
 * True when the principal may read the user's data: the user themselves, or one of the platform's
 * own services (a subgraph calling the graph); never the holder of a service key, whose job is to
 * open sessions, not to read people. Objects of other users answer as if they did not exist, so
 * ids cannot be probed.
 */
export function maySeeUser(principal: Principal, userId: string): boolean {
  return (principal.kind === 'user' && principal.userId === userId) || isInternalService(principal);
}

/**
 * The aggregator behind the principal. A `confined` token is refused where the operation
 * changes state (`access: 'write'`): confined tokens are for read-only integrations such as
 * reporting, and cannot change passwords, applications, payment links or sandbox settings.
 */
export function requireAggregator(principal: Principal, access: 'read' | 'write'): Extract<Principal, { kind: 'aggregator' }> {
  if (principal.kind !== 'aggregator')
    throw appError(ErrorCode.UNAUTHENTICATED, 'This operation needs an aggregator token in the `x-svc-token` header.');
  if (access === 'write' && principal.tokenType === 'confined') {
    throw appError(ErrorCode.FORBIDDEN, 'A confined token may only read; use the base token to change anything.');
  }
  return principal;
}

/**
 * Refuses every caller but the named internal services: a service key for one purpose (say, the
 * statement generator's logins) must not reach another service's operations.
 */
export function requireService(principal: Principal, allowed: readonly string[]): void {
  if (principal.kind !== 'service' || !allowed.includes(principal.service)) {
    throw appError(ErrorCode.FORBIDDEN, `Only these internal services may do this: ${allowed.join(', ')}.`);
  }
}

/** The merchant behind a merchant JWT (`x-svc-jwtoken` from `POST /payment-link/merchant/get-token`). */
export function requireMerchant(principal: Principal): Extract<Principal, { kind: 'merchant' }> {
  if (principal.kind !== 'merchant')
    throw appError(ErrorCode.UNAUTHENTICATED, 'This operation needs a merchant JWT in the `x-svc-jwtoken` header.');
  return principal;
}

/** The customer behind a customer JWT (`x-svc-jwtoken` from `POST /public/customer/payment/link`). */
export function requireCustomer(principal: Principal): Extract<Principal, { kind: 'customer' }> {
  if (principal.kind !== 'customer')
    throw appError(ErrorCode.UNAUTHENTICATED, 'This operation needs a customer JWT in the `x-svc-jwtoken` header.');
  return principal;
}
