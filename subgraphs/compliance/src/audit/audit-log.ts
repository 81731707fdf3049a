import type { Collection, Db, Filter } from 'mongodb';
import { AUDIT_ACTIONS, type AuditAction } from '../../../../platform/contracts/events.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { AuditRecordPayload } from '../../../../platform/contracts/events.js';
import type { AuditRecordInput } from '../__generated__/schema-types.js';
import { isOneOf } from '../../../../platform/contracts/own.js';

/** One stored audit record: the payload of the `audit.recorded` event it came in, under that event's id. */
export interface AuditRecordDocument extends Omit<AuditRecordPayload, 'dts'> {
  _id: string;
  dts: Date;
}

/**
 * The audit log is one append-only collection that the compliance subgraph owns and serves
 * (`Query.auditLog`, operators only). Every subgraph's records come here as events through its
 * outbox (`appendAuditRecords`). One collection keeps the trail in time order across the domain,
 * in one place an operator can read.
 */
export function auditLogCollection(db: Db): Collection<AuditRecordDocument> {
  return db.collection<AuditRecordDocument>('audit_log');
}

/** The indexes of every filter `readAuditLog` runs (time order, alone or by action, actor or subject). */
export async function createAuditLogIndexes(collection: Collection<AuditRecordDocument>): Promise<void> {
  await collection.createIndex({ dts: -1, _id: -1 });
  await collection.createIndex({ action: 1, dts: -1, _id: -1 });
  await collection.createIndex({ actorId: 1, dts: -1, _id: -1 });
  await collection.createIndex({ subjectId: 1, dts: -1, _id: -1 });
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
  return {
    records: found.slice(0, page.first).map((record) => ({ ...record, cursor: cursorOf(record) })),
    hasNextPage: found.length > page.first,
  };
}

/** An `after` cursor that `readAuditLog` did not write. */
export class AuditCursorError extends Error {
  constructor() {
    super('after is not a cursor of the audit log.');
  }
}

/** The actor kinds a record may name: a principal's kind, `anonymous` or `system`. */
export const ACTOR_KINDS: readonly AuditRecordPayload['actorKind'][] = [
  'anonymous',
  'user',
  'prospect',
  'aggregator',
  'merchant',
  'customer',
  'service',
  'system',
];

/** Checks a forwarded record: a known action and actor kind, and flat details. */
function checkRecord(input: AuditRecordInput, index: number): AuditRecordDocument {
  const field = (name: string) => `records[${index}].${name}`;
  if (!(AUDIT_ACTIONS as readonly string[]).includes(input.action))
    throw appError(ErrorCode.VALIDATION_FAILED, `${field('action')} is not an audit action.`, { field: field('action') });
  if (!isOneOf(ACTOR_KINDS, input.actorKind))
    throw appError(ErrorCode.VALIDATION_FAILED, `${field('actorKind')} is not a kind of actor.`, { field: field('actorKind') });
  if (!Object.values(input.details).every((value) => value === null || ['string', 'number', 'boolean'].includes(typeof value))) {
    throw appError(ErrorCode.VALIDATION_FAILED, `${field('details')} holds only strings, numbers, booleans and nulls.`, {
      field: field('details'),
    });
  }
  return {
    _id: input.id,
    action: input.action,
    dts: input.dts,
    actorKind: input.actorKind,
    actorId: input.actorId ?? null,
    subjectType: input.subjectType ?? null,
    subjectId: input.subjectId ?? null,
    requestId: input.requestId ?? null,
    clientIp: input.clientIp ?? null,
    details: input.details as AuditRecordDocument['details'],
  };
}

/**
 * Appends forwarded records, each once by its event id (a batch forwarded again after a crash
 * appends nothing twice); answers how many were new. The whole batch is checked first, so a bad
 * record changes nothing.
 */
export async function appendAuditRecords(
  collection: Collection<AuditRecordDocument>,
  inputs: readonly AuditRecordInput[],
): Promise<number> {
  const records = inputs.map(checkRecord);
  if (records.length === 0) return 0;
  const result = await collection.bulkWrite(
    records.map((record) => ({ updateOne: { filter: { _id: record._id }, update: { $setOnInsert: record }, upsert: true } })),
    { ordered: false },
  );
  return result.upsertedCount;
}
