import type { Db } from 'mongodb';
import type { GraphClient } from '../contracts/graph.js';
import type { Logger } from '../runtime/logger.js';
import type { AuditAction, AuditDetails, AuditRecordPayload } from '../contracts/events.js';
import { graphForwarder, recordEvent, type Dispatcher } from './outbox.js';
import { principalActor, type Principal } from '../contracts/principal.js';

/** Records acts on behalf of one request (or of a background task, as `system`). */
export interface AuditTrail {
  record(action: AuditAction, subject: { type: string; id: string } | null, details?: AuditDetails): Promise<void>;
  /** The same request's trail acting as `system`: for what a request only happens to trigger (a payment link's due expiry). */
  asSystem(): AuditTrail;
}

/**
 * An audit trail bound to who is acting, stored in the acting subgraph's own outbox (`db`) as an
 * `audit.recorded` event, in the write path of the act; that subgraph's messaging engine carries
 * it to compliance, which keeps the audit log and appends each record once, by its id. A record
 * that cannot be stored does not undo or fail the act it reports (which has happened): it is
 * written to the log at error level instead, in full, so the trail has no silent gap.
 */
export function auditTrail(
  db: Db,
  by: { principal: Principal | 'system'; requestId: string | null; clientIp: string | null; logger: Logger },
): AuditTrail {
  const known = by.principal === 'system' ? null : principalActor(by.principal);
  const actor =
    by.principal === 'system'
      ? { actorKind: 'system' as const, actorId: null }
      : { actorKind: known?.kind ?? ('anonymous' as const), actorId: known?.id ?? null };
  return {
    asSystem: () => auditTrail(db, { ...by, principal: 'system' }),
    async record(action, subject, details = {}) {
      const record: AuditRecordPayload = {
        action,
        dts: new Date().toISOString(),
        ...actor,
        subjectType: subject?.type ?? null,
        subjectId: subject?.id ?? null,
        requestId: by.requestId,
        clientIp: by.clientIp,
        details,
      };
      try {
        await recordEvent(db, 'audit.recorded', {}, record);
      } catch (error) {
        by.logger.error('audit record not stored', { record, error });
      }
    },
  };
}

/**
 * An audit trail outside any request, in the outbox of the subgraph whose data it changes (`db`):
 * a background task (`system`, such as a payment link's expiry) or a command-line tool (a service
 * principal, such as `provision`).
 */
export function backgroundAuditTrail(db: Db, logger: Logger, principal: Principal | 'system' = 'system'): AuditTrail {
  return auditTrail(db, { principal, requestId: null, clientIp: null, logger });
}

/** Audit records per forwarding call. */
const AUDIT_BATCH = 50;
const APPEND = 'mutation ($records: [AuditRecordInput!]!) { appendAuditRecords(records: $records) { appended } }';

/** Carries a subgraph's audit records to compliance, through the graph, a batch at a time. */
export function auditForwarder(graph: GraphClient): Dispatcher {
  return graphForwarder({
    name: 'audit forwarding',
    types: ['audit.recorded'],
    batch: AUDIT_BATCH,
    graph,
    mutation: APPEND,
    variablesOf: (events) => ({ records: events.map((event) => ({ id: event._id, ...event.payload })) }),
  });
}
