import { appError, ErrorCode } from './errors.js';
import type { Principal } from './principal.js';

/** The id of the end user behind the principal; anyone else is refused as unauthenticated. */
export function requireUser(principal: Principal): string {
  if (principal.kind !== 'user') throw appError(ErrorCode.UNAUTHENTICATED, 'This operation needs an end-user token in the `token` header.');
  return principal.userId;
}

/**
 * True when the principal may read the user's data: the user themselves, or an internal service.
 * Objects of other users answer as if they did not exist, so ids cannot be probed.
 */
export function maySeeUser(principal: Principal, userId: string): boolean {
  return (principal.kind === 'user' && principal.userId === userId) || principal.kind === 'service';
}
