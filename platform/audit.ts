import type { Collection, Db, Filter } from 'mongodb';
import type { Logger } from './logger.js';
import { principalActor, type Principal } from './principal.js';
import { newId } from './secrets.js';

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
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Details are flat and never carry secrets: ids, names, statuses; no tokens, passwords or card numbers. */
export type AuditDetails = Record<string, string | number | boolean | null>;

/** One stored audit record (`audit_log` in the compliance database). */
export interface AuditRecordDocument {
  _id: string;
  action: AuditAction;
  dts: Date;
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
 * The audit log is one append-only collection that the compliance subgraph owns and serves
 * (`Query.auditLog`, operators only); every subgraph appends to it. One collection keeps the
 * trail in time order across the domain, in one place an operator can read.
 */
export const AUDIT_DATABASE = 'compliance';
const AUDIT_COLLECTION = 'audit_log';

/** The audit log collection in the compliance database. */
export function auditLogCollection(db: Db): Collection<AuditRecordDocument> {
  return db.collection<AuditRecordDocument>(AUDIT_COLLECTION);
}

/** The indexes of every filter `readAuditLog` runs (time order, alone or by action, actor or subject). */
export async function createAuditLogIndexes(collection: Collection<AuditRecordDocument>): Promise<void> {
  await collection.createIndex({ dts: -1, _id: -1 });
  await collection.createIndex({ action: 1, dts: -1, _id: -1 });
  await collection.createIndex({ actorId: 1, dts: -1, _id: -1 });
  await collection.createIndex({ subjectId: 1, dts: -1, _id: -1 });
}


/** Records acts on behalf of one request (or of a background task, as `system`). */
export interface AuditTrail {
  record(action: AuditAction, subject: { type: string; id: string } | null, details?: AuditDetails): Promise<void>;
  /** The same request's trail acting as `system`: for what a request only happens to trigger (a payment link's due expiry). */
  asSystem(): AuditTrail;
}

/**
 * An audit trail bound to who is acting. A record that cannot be stored does not undo or fail
 * the act it reports (which has happened): it is written to the log at error level instead, in
 * full, so the trail has no silent gap.
 */
export function auditTrail(
  collection: Collection<AuditRecordDocument>,
  by: { principal: Principal | 'system'; requestId: string | null; clientIp: string | null; logger: Logger },
): AuditTrail {
  const known = by.principal === 'system' ? null : principalActor(by.principal);
  const actor = by.principal === 'system' ? { actorKind: 'system' as const, actorId: null } : { actorKind: known?.kind ?? ('anonymous' as const), actorId: known?.id ?? null };
  return {
    asSystem: () => auditTrail(collection, { ...by, principal: 'system' }),
    async record(action, subject, details = {}) {
      const record: AuditRecordDocument = {
        _id: newId('aud_'),
        action,
        dts: new Date(),
        ...actor,
        subjectType: subject?.type ?? null,
        subjectId: subject?.id ?? null,
        requestId: by.requestId,
        clientIp: by.clientIp,
        details,
      };
      try {
        await collection.insertOne(record);
      } catch (error) {
        by.logger.error('audit record not stored', { record, error });
      }
    },
  };
}

/** The filters of an audit log query; every one optional. */
export interface AuditLogFilter {
  action?: AuditAction | null;
  actorId?: string | null;
  subjectId?: string | null;
  since?: Date | null;
  until?: Date | null;
}

const cursorOf = (record: AuditRecordDocument) => Buffer.from(`${record.dts.toISOString()}|${record._id}`).toString('base64url');

/** Reads the audit log newest first, `first` records after the `after` cursor: one indexed query. */
export async function readAuditLog(
  collection: Collection<AuditRecordDocument>,
  filter: AuditLogFilter,
  page: { first: number; after?: string | null },
): Promise<{ records: Array<AuditRecordDocument & { cursor: string }>; hasNextPage: boolean }> {
  const query: Filter<AuditRecordDocument> = {};
  if (filter.action) query.action = filter.action;
  if (filter.actorId) query.actorId = filter.actorId;
  if (filter.subjectId) query.subjectId = filter.subjectId;
  const dts: { $gte?: Date; $lt?: Date } = {};
  if (filter.since) dts.$gte = filter.since;
  if (filter.until) dts.$lt = filter.until;
  const conditions: Array<Filter<AuditRecordDocument>> = [query];
  if (dts.$gte || dts.$lt) conditions.push({ dts });
  if (page.after) {
    const [at, id] = Buffer.from(page.after, 'base64url').toString('utf8').split('|');
    const after = new Date(at ?? '');
    if (Number.isNaN(after.getTime()) || !id) throw new AuditCursorError();
    conditions.push({ $or: [{ dts: { $lt: after } }, { dts: after, _id: { $lt: id } }] });
  }
  const found = await collection
    .find(conditions.length === 1 ? query : { $and: conditions })
    .sort({ dts: -1, _id: -1 })
    .limit(page.first + 1)
    .toArray();
  return { records: found.slice(0, page.first).map((record) => ({ ...record, cursor: cursorOf(record) })), hasNextPage: found.length > page.first };
}

/** An `after` cursor that `readAuditLog` did not write. */
export class AuditCursorError extends Error {
  constructor() {
    super('after is not a cursor of the audit log.');
  }
}

/**
 * An audit trail outside any request: a background task (`system`, such as a payment link's
 * expiry) or a command-line tool (a service principal, such as `provision`).
 */
export function backgroundAuditTrail(complianceDb: Db, logger: Logger, principal: Principal | 'system' = 'system'): AuditTrail {
  return auditTrail(auditLogCollection(complianceDb), { principal, requestId: null, clientIp: null, logger });
}
