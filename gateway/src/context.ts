import type { Principal } from '../../platform/contracts/principal.js';

/** The gateway's per-request context: who is calling, established once. */
export interface GatewayContext {
  principal: Principal;
  /** Pending while the session of an early principal is read afresh (see `Authentication`); null once established in full. */
  sessionConfirmed: Promise<void> | null;
  requestId: string;
  clientIp: string | null;
  /** What its operation is remembered by for the rate limits, and whether its root fields were counted before it was parsed. */
  operationKey?: string | null;
  fieldsCounted?: boolean;
}
